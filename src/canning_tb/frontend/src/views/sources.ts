// Where the figures come from: the Overview's "Data" panel (a window's files, what each covers, which
// one each figure uses, the sources checked against each other: analysis/coverage.py) and, across ranks,
// the communicators, the matrix links per transport and group, and each rank's sources (analysis/cluster.py).
// Everything shown is analysis's; nothing is computed here.
import type { ClusterGroup, ClusterResponse, Coverage, MatrixLink, SourceCheck, SourceFile } from "../api";
import { h } from "../dom";
import { fixed2, int, mb, ms, pct } from "../format";
import { tip } from "../glossary";
import { card, SortTable } from "./common";

function fileRow(file: SourceFile): HTMLElement {
  const count = file.rows >= 0 ? (file.sampled ? ` (${int(file.rows)} of ${int(file.of_rows)})` : ` (${int(file.rows)})`) : "";
  return h(
    "li",
    { class: file.sampled ? "warning" : "", "data-file": file.file, "data-sampled": file.sampled },
    h("strong", { text: `${file.file}${count}` }),
    `: ${file.covers}`,
    ...(file.sampled ? [h("span", { class: "badge", text: "sample" }), ` ${file.note}`] : []),
  );
}

function checkText(check: SourceCheck): string {
  const verdict = check.agree ? "agree" : check.difference !== null && check.difference >= 0 ? `differ by ${pct(check.difference)}%` : "unknown";
  return `${check.figure}: ${check.source_a} ${ms(check.value_a)} ms, ${check.source_b} ${ms(check.value_b)} ms: ${verdict}`;
}

/** The Overview's "Data" card; null when the digest has no coverage (written before it existed). */
export function dataCard(coverage: Coverage | undefined): HTMLElement | null {
  if (!coverage || (!coverage.files.length && !coverage.figures.length)) return null;
  const figures = h(
    "ul",
    { id: "ov-data-figures", class: "plain" },
    ...coverage.figures.map((f) => h("li", { "data-figure": f.figure }, h("strong", { text: f.figure }), ` from ${f.source || "unknown"}${f.note ? `: ${f.note}` : ""}`)),
  );
  const checks = coverage.checks.length
    ? h("ul", { id: "ov-data-checks", class: "plain" }, ...coverage.checks.map((c) => h("li", { class: c.agree ? "" : "warning", "data-agree": c.agree, title: c.note, text: checkText(c) })))
    : null;
  return card(
    "Data: the files, what each covers, where each figure comes from",
    h("p", { class: "muted", text: tip("source_coverage") }),
    h("ul", { id: "ov-data-files", class: "plain" }, ...coverage.files.map(fileRow)),
    figures,
    checks,
  );
}

const LINK_COLS = [
  { key: "src", label: "From rank", num: true, value: (l: MatrixLink) => l.src, fmt: (l: MatrixLink) => String(l.src) },
  { key: "dst", label: "To rank", num: true, value: (l: MatrixLink) => l.dst, fmt: (l: MatrixLink) => String(l.dst) },
  { key: "transport", label: "Transport", value: (l: MatrixLink) => l.transport },
  { key: "group", label: "Communicator", value: (l: MatrixLink) => l.group_label || l.group, tip: tip("comm_group") },
  { key: "bytes", label: "Size (MB)", num: true, value: (l: MatrixLink) => l.bytes, fmt: (l: MatrixLink) => mb(l.bytes) },
  { key: "time", label: "Time (ms)", num: true, value: (l: MatrixLink) => l.time_ns, fmt: (l: MatrixLink) => ms(l.time_ns) },
  { key: "bw", label: "Bandwidth (GB/s)", num: true, value: (l: MatrixLink) => l.bandwidth_gbps ?? -1, fmt: (l: MatrixLink) => fixed2(l.bandwidth_gbps ?? -1), tip: tip("bandwidth") },
];

/** The matrix's cells in global ranks, one row per (src, dst, transport, communicator). */
export function linksCard(cl: ClusterResponse): HTMLElement | null {
  if (cl.matrix_source !== "links" || !cl.matrix.length) return null;
  const table = new SortTable<MatrixLink>("comm-links", LINK_COLS, "bytes", true, "No link.");
  table.setRows(cl.matrix);
  const lost = cl.matrix_unmapped;
  const note = lost.links
    ? h("p", { id: "comm-unmapped", class: "muted", text: `${lost.links} links (${mb(lost.bytes)} MB) of ${lost.groups.length} communicator(s) are numbered inside their communicator and no file maps those members to global ranks: left out, never put on a rank they may not belong to.` })
    : null;
  return card("Links per transport and communicator (global ranks, communication_matrix.json)", h("p", { class: "muted", text: tip("matrix_link") }), h("div", { class: "table-wrap short" }, table.el), note);
}

function groupRow(g: ClusterGroup): HTMLElement {
  const ranks = g.ranks.length ? `ranks ${g.ranks.join(", ")}${g.ranks_source ? ` (${g.ranks_source})` : ""}` : `${g.members > 0 ? g.members : "?"} members, ranks unknown`;
  const missing = g.missing.length ? `; no call from ${g.missing.join(", ")}` : "";
  return h("li", { "data-group": g.group, title: `id ${g.group}` }, h("strong", { text: g.label || g.group }), `: ${ranks}; called by ${g.calling_ranks.join(", ") || "none"}${missing}`);
}

/** The run's communicators, its world size and where each rank's figures come from. */
export function sourcesCard(cl: ClusterResponse): HTMLElement {
  const waits = new Map<string, number[]>();
  for (const row of cl.ranks) waits.set(row.wait_source || "unknown", [...(waits.get(row.wait_source || "unknown") ?? []), row.rank]);
  const lines: string[] = [
    `Split of each rank's step from ${cl.breakdown_source ?? "trace"}.`,
    `Wait and transfer from ${[...waits].map(([source, ranks]) => `${source} (rank ${ranks.join(", ")})`).join("; ")}.`,
    `World size ${cl.world_size > 0 ? cl.world_size : "unknown"}${cl.world_size_source ? ` (${cl.world_size_source})` : ""}.`,
  ];
  for (const rank of cl.coverage) for (const note of [...rank.sampled, ...rank.disagree]) lines.push(`Rank ${rank.rank}: ${note}.`);
  return card(
    "Communicators and sources",
    h("ul", { id: "comm-groups", class: "plain" }, ...cl.groups.map(groupRow)),
    h("ul", { id: "comm-sources", class: "plain" }, ...lines.map((text) => h("li", { text }))),
  );
}
