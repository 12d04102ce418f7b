// Communication: the collectives of this window, and across the ranks of the run (route /cluster,
// computed by analysis/cluster.py): step split per rank, wait vs transfer, slow-rank findings and
// the communication matrix. A step selector shows one step instead of the mean step; every figure
// is analysis's (summary.communication_figures, wait_transfer.py), with its glossary tooltip.
import {
  windowParams,
  type ClusterResponse,
  type CollectiveStat,
  type CommFigureRow,
  type CommunicationResponse,
  type MatrixCell,
  type RankRow,
  type RankSplit,
  type StepCollective,
} from "../api";
import { RawChart, tipLines } from "../chart";
import { h } from "../dom";
import { fixed2, int, mb, ms, pct } from "../format";
import { tip, UNKNOWN_TIP } from "../glossary";
import { crossRankPathCard } from "./critical_path";
import { card, errorText, fetchOr, kvTable, pollCluster, problemsList, rankProgress, SortTable, type Col } from "./common";
import { drawBinnedMatrix, RANKS_AS_ROWS, spreadParts } from "./ranks_spread";
import { linksCard, sourcesCard } from "./sources";
import { openTimelineAt } from "./timeline_link";
import { showEmpty, showLoading, type ViewDef, type ViewHost } from "./view";

type Collective = CollectiveStat;

/** A communicator as the files name it (its label: name, ranks, or size; analysis), its id on hover. */
type GroupLabels = Map<string, string>;

function groupLabels(data: CommunicationResponse): GroupLabels {
  return new Map(data.communication.groups.map((g) => [g.group, g.label || g.group]));
}

function groupCol<T extends { group: string }>(labels: GroupLabels): Col<T> {
  return { key: "group", label: "Group", value: (c) => labels.get(c.group) ?? c.group, tip: "Communicator: its name, else the ranks it holds (hover a row for its id)" };
}

const COLL_COLS = (labels: GroupLabels): Col<Collective>[] => [
  { key: "kind", label: "Kind", value: (c) => c.kind },
  groupCol<Collective>(labels),
  { key: "calls", label: "Calls", num: true, value: (c) => c.calls, fmt: (c) => int(c.calls) },
  { key: "total", label: "Total (ms)", num: true, value: (c) => c.total_ns, fmt: (c) => ms(c.total_ns) },
  { key: "avg", label: "Avg (ms)", num: true, value: (c) => (c.calls ? c.total_ns / c.calls : -1), fmt: (c) => ms(c.calls ? c.total_ns / c.calls : -1) },
  { key: "max", label: "Max (ms)", num: true, value: (c) => c.max_ns, fmt: (c) => ms(c.max_ns) },
  { key: "bytes", label: "Size (MB)", num: true, value: (c) => c.bytes, fmt: (c) => mb(c.bytes) },
  { key: "bw", label: "Bandwidth (GB/s)", num: true, value: (c) => c.bandwidth_gbps ?? -1, fmt: (c) => fixed2(c.bandwidth_gbps ?? -1), tip: tip("bandwidth") },
  { key: "wait", label: "Wait (ms)", num: true, value: (c) => c.wait_ns, fmt: (c) => ms(c.wait_ns), tip: `${tip("collective_wait_transfer")} ${tip("wait")}` },
  { key: "transfer", label: "Transfer (ms)", num: true, value: (c) => c.transfer_ns, fmt: (c) => ms(c.transfer_ns), tip: `${tip("collective_wait_transfer")} ${tip("transfer")}` },
];

/** The collectives of one step (from its calls): no per-call wait / transfer split per step. */
const STEP_COLL_COLS = (labels: GroupLabels): Col<StepCollective>[] => [
  { key: "kind", label: "Kind", value: (c) => c.kind },
  groupCol<StepCollective>(labels),
  { key: "calls", label: "Calls", num: true, value: (c) => c.calls, fmt: (c) => int(c.calls) },
  { key: "total", label: "Total (ms)", num: true, value: (c) => c.total_ns, fmt: (c) => ms(c.total_ns), tip: "Sum of the calls' durations in this step" },
  { key: "bytes", label: "Size (MB)", num: true, value: (c) => c.bytes, fmt: (c) => mb(c.bytes) },
];

/** The step the view shows: null for the mean step (the unit of every per-rank figure). */
type StepChoice = number | null;

/** A rank's split over the chosen step (its per_step row) or the mean step (the row itself). */
function rankSplit(row: RankRow, step: StepChoice): RankSplit | null {
  if (step === null) return row;
  return row.per_step.find((s) => s.step === step) ?? null;
}

type SplitRow = RankSplit & { rank: number };

function splitRows(cl: ClusterResponse, step: StepChoice): SplitRow[] {
  return cl.ranks.flatMap((row) => {
    const split = rankSplit(row, step);
    return split ? [{ ...split, rank: row.rank }] : [];
  });
}

/** analysis/rules/thresholds.py SLOW_RANK_RATIO: the spread ((max - min) / mean) a finding needs at least. */
const SLOW_RANK_RATIO = 0.05;

const METRIC_TEXT: Record<string, string> = {
  computing: "Computing (compute + overlapped)",
  communication: "Communication not overlapped",
  free: "Free (neither computing nor communicating)",
};

function rankTable(cl: ClusterResponse, computeLabel: string, step: StepChoice): SortTable<SplitRow> {
  const rankName = new Map(cl.workers.map((w) => [w.rank, w.worker]));
  const waitSource = new Map(cl.ranks.map((row) => [row.rank, row.wait_source]));
  const table = new SortTable<SplitRow>(
    "comm-rank-table",
    [
      // the worker's name on hover: the table keeps room for both communication figures at 1280 px
      { key: "rank", label: "Rank", num: true, value: (row) => row.rank, fmt: (row) => String(row.rank), title: (row) => rankName.get(row.rank) ?? "" },
      { key: "step", label: "Step (ms)", num: true, value: (row) => row.step_ns, fmt: (row) => ms(row.step_ns), tip: tip("step_time") },
      { key: "compute", label: `${computeLabel} (ms)`, num: true, value: (row) => row.compute_ns, fmt: (row) => ms(row.compute_ns), tip: tip(cl.compute_source === "host" ? "host" : "compute") },
      { key: "overlapped", label: "Overlapped (ms)", num: true, value: (row) => row.overlapped_ns, fmt: (row) => ms(row.overlapped_ns), tip: tip("overlapped") },
      // two figures, each named as the glossary defines it: the collectives' whole time (what Wait and
      // Transfer split) and the part of it no compute hides (the step split's Communication)
      { key: "comm_total", label: "Communication time (ms)", num: true, value: (row) => row.communication_total_ns, fmt: (row) => ms(row.communication_total_ns), tip: tip("comm_total") },
      { key: "comm", label: "Comm. not overlapped (ms)", num: true, value: (row) => row.communication_ns, fmt: (row) => ms(row.communication_ns), tip: tip("communication") },
      { key: "free", label: "Free (ms)", num: true, value: (row) => row.free_ns, fmt: (row) => ms(row.free_ns), tip: tip("free") },
      { key: "preparing", label: "Preparing (ms)", num: true, value: (row) => row.preparing_ns, fmt: (row) => ms(row.preparing_ns), tip: tip("preparing") },
      { key: "other", label: "Other (ms)", num: true, value: (row) => row.other_ns, fmt: (row) => ms(row.other_ns), tip: tip("rank_other") },
      { key: "wait", label: "Wait (ms)", num: true, value: (row) => row.wait_ns, fmt: (row) => ms(row.wait_ns), tip: tip("wait") },
      { key: "p2p", label: "P2P wait (ms)", num: true, value: (row) => row.p2p_wait_ns, fmt: (row) => ms(row.p2p_wait_ns), tip: tip("p2p_wait") },
      { key: "transfer", label: "Transfer (ms)", num: true, value: (row) => row.transfer_ns, fmt: (row) => ms(row.transfer_ns), tip: tip("transfer") },
      { key: "wait_source", label: "Wait from", value: (row) => waitSource.get(row.rank) || "unknown", tip: tip("wait_source") },
    ],
    "rank",
    false,
    step === null ? "No rank." : `No rank has step ${step}.`,
  );
  table.setRows(splitRows(cl, step));
  return table;
}

/** The spread of each figure over the ranks, and the slow rank where the findings name one: a rank is
 * called slow here only when Suggestions call it so (the same rule: analysis/rules/cluster_rules.py,
 * SLOW_RANK_RATIO and the noise test), so a spread above 5 % alone paints no rank. A pipeline run's
 * stage imbalance is said as the findings say it. */
function slowRankFindings(cl: ClusterResponse): HTMLElement {
  const named = new Map(cl.findings.filter((f) => f.rule.startsWith("slow_rank_")).map((f) => [f.rule.slice("slow_rank_".length), f]));
  const stages = cl.findings.filter((f) => f.rule === "stage_imbalance");
  const items = stages.map((f) => h("li", { class: "sev-warning", "data-metric": "stage", "data-rank": f.evidence[0]?.rank ?? -1 },
    h("span", { class: "badge", text: "stage imbalance" }), h("strong", { text: f.title }), h("p", { text: f.detail })));
  for (const slow of cl.slow_ranks) {
    const finding = named.get(slow.metric);
    const rank = finding?.evidence[0]?.rank ?? -1;
    const verdict = finding ? `rank ${rank} is the slow rank` : slow.ratio > SLOW_RANK_RATIO ? "no slow rank by the findings' rule" : "balanced across ranks";
    const waitedFor = slow.metric === "communication" && finding ? " The rank with the least communication is the one the others wait for." : "";
    const why = !finding && slow.ratio > SLOW_RANK_RATIO
      ? ` The spread is over ${pct(SLOW_RANK_RATIO)}%, but Suggestions name no rank for it (within the noise between steps, or another figure names the rank the others wait for${stages.length ? ", or the pipeline's stages explain it" : ""}).`
      : "";
    const detail = `max ${ms(slow.max_ns)} ms (rank ${slow.max_rank}), min ${ms(slow.min_ns)} ms (rank ${slow.min_rank}), spread ${pct(slow.ratio)}% of the mean ${ms(slow.mean_ns)} ms.${waitedFor}${why}`;
    items.push(h(
      "li",
      { class: finding ? "sev-warning" : "sev-info", "data-metric": slow.metric, "data-rank": rank },
      h("span", { class: "badge", text: finding ? "slow rank" : "no slow rank" }),
      h("strong", { text: `${METRIC_TEXT[slow.metric] ?? slow.metric}: ${verdict}` }),
      h("p", { text: detail }),
    ));
  }
  return h("ul", { id: "comm-slow", class: "suggestions" }, ...items);
}

function drawRankSplit(el: HTMLElement, rows: SplitRow[], computeLabel: string): RawChart {
  const chart = new RawChart(el);
  const cats: [keyof RankSplit, string, string][] = [
    ["compute_ns", computeLabel, "#388e3c"],
    ["overlapped_ns", "Overlapped", "#8bc34a"],
    ["communication_ns", "Communication (not overlapped)", "#c62828"],
    ["free_ns", "Free", "#bdbdbd"],
    ["preparing_ns", "Preparing", "#7e57c2"],
    ["other_ns", "Other", "#9e9e9e"],
  ];
  const tooltip = (index: number) => {
    const row = rows[index];
    return tipLines(`rank ${row.rank}: step ${ms(row.step_ns)} ms`, cats.map(([key, label]) => `${label}: ${ms(row[key])} ms`));
  };
  chart.set({
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, confine: true, formatter: (ps: { dataIndex: number }[]) => tooltip(ps[0]?.dataIndex ?? 0) },
    legend: { top: 0 },
    grid: { left: 8, right: 24, top: 32, bottom: 24, containLabel: true },
    xAxis: { type: "value", name: "ms", nameLocation: "middle", nameGap: 22 },
    yAxis: { type: "category", data: rows.map((row) => `rank ${row.rank}`), inverse: true },
    series: cats.map(([key, label, color]) => ({ type: "bar", name: label, stack: "rank", itemStyle: { color }, barMaxWidth: 28, data: rows.map((row) => known(row[key])) })),
  });
  return chart;
}

/** Unknown (-1) is not drawn: no bar rather than a bar at 0. */
function known(ns: number): number | null {
  return ns < 0 ? null : ns / 1e6;
}

function drawWaitTransfer(el: HTMLElement, rows: SplitRow[]): RawChart {
  const chart = new RawChart(el);
  const tooltip = (index: number) => {
    const row = rows[index];
    return tipLines(`rank ${row.rank}: communication ${ms(row.communication_total_ns)} ms`, [
      `Wait: ${ms(row.wait_ns)} ms`,
      `P2P wait: ${ms(row.p2p_wait_ns)} ms`,
      `Transfer: ${ms(row.transfer_ns)} ms`,
    ]);
  };
  chart.set({
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, confine: true, formatter: (ps: { dataIndex: number }[]) => tooltip(ps[0]?.dataIndex ?? 0) },
    legend: { top: 0 },
    grid: { left: 8, right: 24, top: 32, bottom: 24, containLabel: true },
    xAxis: { type: "category", data: rows.map((row) => `rank ${row.rank}`) },
    yAxis: { type: "value", name: "ms", min: 0 },
    series: [
      { type: "bar", name: "Wait", stack: "comm", itemStyle: { color: "#f57c00" }, barMaxWidth: 36, data: rows.map((row) => known(row.wait_ns)) },
      { type: "bar", name: "P2P wait", stack: "comm", itemStyle: { color: "#ffb74d" }, barMaxWidth: 36, data: rows.map((row) => known(row.p2p_wait_ns)) },
      { type: "bar", name: "Transfer", stack: "comm", itemStyle: { color: "#1976d2" }, barMaxWidth: 36, data: rows.map((row) => known(row.transfer_ns)) },
      {
        type: "bar",
        name: "Communication",
        barGap: "-100%",
        itemStyle: { color: "rgba(0,0,0,0)", borderColor: "#616161", borderType: "dashed" },
        barMaxWidth: 36,
        data: rows.map((row) => known(row.communication_total_ns)),
      },
    ],
  });
  return chart;
}

/** The matrix as /cluster's matrix_cells give it (summed per (src, dst) in analysis). */
function drawMatrix(el: HTMLElement, cells: MatrixCell[]): RawChart {
  const ranks = [...new Set(cells.flatMap((cell) => [cell.src, cell.dst]))].sort((a, b) => a - b);
  const data = cells.map((cell) => [ranks.indexOf(cell.dst), ranks.indexOf(cell.src), +(cell.bytes / 1048576).toFixed(1), cells.indexOf(cell)]);
  const tooltip = (value: number[]) => {
    const cell = cells[value[3]];
    const time = cell.time_ns > 0 ? `${ms(cell.time_ns)} ms, ${fixed2(cell.bandwidth_gbps ?? -1)} GB/s` : "time unknown";
    const groups = cell.groups?.length ? [`communicator: ${cell.groups.join(", ")}`] : [];
    return tipLines(`rank ${cell.src} → rank ${cell.dst}`, [`${value[2].toFixed(1)} MB`, time, `transport: ${cell.transports.join(", ")}`, ...groups]);
  };
  const chart = new RawChart(el);
  chart.set({
    tooltip: { confine: true, formatter: (item: { value: number[] }) => tooltip(item.value) },
    grid: { left: 8, right: 80, top: 16, bottom: 40, containLabel: true },
    xAxis: { type: "category", name: "to", data: ranks.map((rank) => `rank ${rank}`), splitArea: { show: true } },
    yAxis: { type: "category", name: "from", data: ranks.map((rank) => `rank ${rank}`), splitArea: { show: true } },
    visualMap: { min: 0, max: Math.max(1, ...data.map((cell) => cell[2])), calculable: true, orient: "vertical", right: 0, top: "middle", dimension: 2, inRange: { color: ["#fff3e0", "#f57c00", "#bf360c"] } },
    series: [{ type: "heatmap", data, label: { show: true, formatter: (item: { value: number[] }) => `${item.value[2]}` } }],
  });
  return chart;
}

function matrixCard(cl: ClusterResponse, el: HTMLElement): HTMLElement {
  const title =
    cl.matrix_source === "links"
      ? "Communication matrix (MB sent, global ranks, from communication_matrix.json)"
      : "Communication matrix (MB sent, ring estimate from collective sizes)";
  return card(title, el);
}

function clusterSection(host: ViewHost, cl: ClusterResponse, step: StepChoice, charts: RawChart[]): HTMLElement[] {
  const list = h("p", { id: "comm-ranks", class: "muted", text: `Ranks: ${cl.ranks.map((row) => row.rank).join(", ")} (window ${cl.window_index + 1} of each rank)` });
  if (cl.ranks.length < 2) {
    const why = "Only one rank in this run: the comparison across ranks (wait vs transfer, slow ranks, matrix) needs the profiles of two or more ranks in the same run folder.";
    return [card("Across ranks", list, h("p", { class: "muted", text: why }))];
  }
  const rows = splitRows(cl, step);
  const which = step === null ? "mean step" : `step ${step}`;
  const computeLabel = cl.compute_source === "host" ? "Compute (host ops)" : "Compute";
  const splitEl = h("div", { id: "comm-rank-chart", class: "chart", "data-ranks": rows.length, "data-step": step ?? "mean" });
  const waitEl = h("div", { id: "comm-wait-chart", class: "chart", title: `${tip("wait")} ${tip("transfer")}` });
  const matrixEl = cl.matrix_cells.length ? h("div", { id: "comm-matrix", class: "chart", "data-cells": cl.matrix_cells.length }) : null;
  const unmatched = cl.unmatched.length
    ? h("p", { class: "muted", text: `Call counts differ between ranks for ${cl.unmatched.map((u) => `${u.kind} (${u.group})`).join(", ")}: matched on the common calls only.` })
    : null;
  if (cl.ranks.length > RANKS_AS_ROWS) return manyRanks(host, cl, charts, computeLabel, unmatched);
  const definition = h("p", { id: "comm-definition", class: "muted", text: `Wait and transfer: ${tip("wait")} ${tip("transfer")}` });
  const out = [
    card(`Across ranks: ${which} (ms)`, list, splitEl),
    h("div", { class: "grid2" }, card(`Wait vs transfer per rank, ${which} (ms)`, waitEl, definition), card("Slow ranks (mean step)", slowRankFindings(cl), unmatched)),
    card(`Ranks, ${which}`, h("div", { class: "table-wrap short" }, rankTable(cl, computeLabel, step).el)),
    crossRankPathCard(host, cl),
    ...(matrixEl ? [matrixCard(cl, matrixEl)] : []),
    ...[linksCard(cl)].filter((el): el is HTMLElement => !!el),
    sourcesCard(cl),
  ];
  // draw once in the document
  queueMicrotask(() => {
    if (host.signal.aborted) return;
    charts.push(drawRankSplit(splitEl, rows, computeLabel), drawWaitTransfer(waitEl, rows));
    if (matrixEl) charts.push(drawMatrix(matrixEl, cl.matrix_cells));
  });
  return out;
}

/** Many ranks: the spread (heat map, boxes, outliers named) instead of a bar per rank; the matrix in
 * bins of ranks; every rank's row on request. */
function manyRanks(host: ViewHost, cl: ClusterResponse, charts: RawChart[], computeLabel: string, unmatched: HTMLElement | null): HTMLElement[] {
  const binned = cl.matrix_bins.ranks_per_bin > 1 || cl.matrix_truncated;
  const matrixEl = cl.matrix_cells.length ? h("div", { id: "comm-matrix", class: "chart tall", "data-cells": binned ? cl.matrix_bins.cells.length : cl.matrix_cells.length, "data-binned": binned }) : null;
  queueMicrotask(() => {
    if (host.signal.aborted || !matrixEl) return;
    charts.push(binned ? drawBinnedMatrix(matrixEl, cl.matrix_bins) : drawMatrix(matrixEl, cl.matrix_cells));
  });
  const every = h("details", { id: "comm-every-rank" }, h("summary", { text: `Every rank (${cl.ranks.length} rows)` }), h("div", { class: "table-wrap short" }, rankTable(cl, computeLabel, null).el));
  const binText = binned ? `, ${cl.matrix_bins.ranks_per_bin} ranks a cell` : "";
  return [
    card(`Across ${cl.ranks.length} ranks (window ${cl.window_index + 1} of each)`, ...spreadParts(cl, "comm", charts, host.signal)),
    card("Slow ranks", slowRankFindings(cl), unmatched),
    crossRankPathCard(host, cl),
    ...(matrixEl ? [card(`Communication matrix (MB sent${binText}; ${cl.matrix_source === "links" ? "global ranks, communication_matrix.json" : "ring estimate"})`, matrixEl)] : []),
    card("Ranks", every),
    sourcesCard(cl),
  ];
}

function showNoCommunication(host: ViewHost, data: CommunicationResponse): void {
  showEmpty(
    host,
    "No communication in this window",
    `This window has no collective (NCCL / HCCL / Gloo all_reduce, all_gather, send/recv…)${data.info.world_size === 1 ? ": it looks like a single-rank run (world size 1)" : ""}.`,
    "Profile a distributed run (torch.distributed, DDP / FSDP) and write every rank's profile into the same run folder to compare the ranks here.",
  );
}

/** What the view shows: this window's answer, the ranks' (once loaded) and the chosen step. */
interface CommView {
  data: CommunicationResponse;
  cl: ClusterResponse | null;
  step: StepChoice;
}

/** This rank's figures for the chosen step; wait / transfer from the ranks' row (calls matched across
 * the ranks) when the run has several, else this rank's own (CANN's measurement, or unknown). */
function thisRank(view: CommView, worker: string): CommFigureRow | null {
  const { data, cl, step } = view;
  const own = step === null ? data.figures.mean : data.figures.steps.find((s) => s.step === step);
  if (!own) return null;
  const member = cl && cl.ranks.length > 1 ? cl.workers.find((w) => w.worker === worker) : undefined;
  const row = member ? cl?.ranks.find((r) => r.rank === member.cluster_rank) : undefined;
  const split = row ? rankSplit(row, step) : null;
  return split ? { ...own, wait_ns: split.wait_ns, p2p_wait_ns: split.p2p_wait_ns, transfer_ns: split.transfer_ns } : own;
}

function figureRow(label: string, value: string, definition: string): [string, string, string] {
  return [label, value, value === "–" ? `${definition} ${UNKNOWN_TIP}` : definition];
}

function thisRankCard(view: CommView, worker: string): HTMLElement {
  const row = thisRank(view, worker);
  const which = view.step === null ? "mean step" : `step ${view.step}`;
  if (!row) return card(`This rank, ${which}`, h("p", { class: "muted", text: `This rank has no step ${view.step}.` }));
  const alone = !(view.cl && view.cl.ranks.length > 1);
  const waitNote = row.wait_ns < 0 && alone ? " Unknown from this rank's trace alone: it needs the other ranks' profiles of the same steps in this run folder." : "";
  const summary = kvTable("comm-summary", [
    figureRow("Step (ms)", ms(row.dur_ns), tip("step_time")),
    figureRow("Communication (ms)", ms(row.total_ns), tip("comm_total")),
    figureRow("Not overlapped (ms)", ms(row.not_overlapped_ns), tip("communication")),
    figureRow("Overlapped with compute (ms)", ms(row.overlapped_ns), tip("overlapped")),
    figureRow("Not overlapped of the step (%)", pct(row.not_overlapped_share ?? -1), tip("comm_not_hidden_share")),
    figureRow("Wait (ms)", ms(row.wait_ns), tip("wait") + waitNote),
    figureRow("P2P wait (ms)", ms(row.p2p_wait_ns), tip("p2p_wait") + waitNote),
    figureRow("Transfer (ms)", ms(row.transfer_ns), tip("transfer") + waitNote),
  ]);
  return card(`This rank, ${which}`, summary);
}

function collectivesCard(host: ViewHost, view: CommView): HTMLElement {
  const rank = view.data.info.rank >= 0 ? view.data.info.rank : "?";
  if (view.step !== null) {
    const found = view.data.figures.steps.find((s) => s.step === view.step);
    const table = new SortTable<StepCollective>("comm-table", STEP_COLL_COLS(groupLabels(view.data)), "total", true, `No collective in step ${view.step}.`, undefined, {
      decorateRow: (collective, row) => {
        row.title = `Communicator ${collective.group || "(unnamed)"}`;
        return null;
      },
    });
    table.setRows(found?.collectives ?? []);
    return card(`Collectives of rank ${rank}, step ${view.step}`, h("div", { class: "table-wrap short" }, table.el));
  }
  const collTable = new SortTable<Collective>("comm-table", COLL_COLS(groupLabels(view.data)), "total", true, "This rank has no collective in this window.", undefined, {
    decorateRow: (collective, row) => {
      row.title = `Communicator ${collective.group || "(unnamed)"}. Double-click: the slowest call of this kind in the Timeline`;
      row.ondblclick = () => openTimelineAt(host.store, collective.kind, "collective");
      return null;
    },
  });
  collTable.setRows(view.data.communication.collectives);
  return card(`Collectives of rank ${rank} (window)`, h("div", { class: "table-wrap short" }, collTable.el));
}

function stepSelect(view: CommView, onChange: (step: StepChoice) => void): HTMLElement {
  const select = h("select", { id: "comm-step", title: "The mean step (the unit of every per-rank figure) or one step of the window" }) as HTMLSelectElement;
  select.append(h("option", { value: "", text: "Mean step" }), ...view.data.figures.steps.map((s) => h("option", { value: String(s.step), text: `Step ${s.step}` })));
  select.value = view.step === null ? "" : String(view.step);
  select.onchange = () => onChange(select.value === "" ? null : Number(select.value));
  return h("label", { class: "toolbar", id: "comm-step-bar" }, "Step ", select);
}

/** Draws the whole view for the chosen step (again on each change of step). */
function render(host: ViewHost, view: CommView): void {
  const charts: RawChart[] = [];
  const dispose = () => charts.forEach((chart) => chart.dispose());
  host.signal.addEventListener("abort", dispose, { once: true });
  const rerender = (step: StepChoice) => {
    dispose();
    host.signal.removeEventListener("abort", dispose);
    render(host, { ...view, step });
  };
  const problems = view.cl?.problems.length
    ? [h("ul", { class: "problems" }, ...view.cl.problems.map((problem) => h("li", { class: "error", text: `${problem.worker} / ${problem.window}: ${problem.message}` })))]
    : [];
  host.el.replaceChildren(
    ...[problemsList(view.data.problems, "comm-problems")].filter((el): el is HTMLElement => !!el),
    stepSelect(view, rerender),
    collectivesCard(host, view),
    thisRankCard(view, host.sel.worker),
    ...problems,
    ...(view.cl ? clusterSection(host, view.cl, view.step, charts) : []),
  );
}

/** The cross-rank part, once /cluster has digested every rank's window (polled with progress). */
async function showCluster(host: ViewHost, data: CommunicationResponse): Promise<void> {
  const progress = rankProgress("comm-progress");
  progress.update(0, host.run?.workers.length ?? 1);
  render(host, { data, cl: null, step: null });
  host.el.append(progress.el);
  let cl: ClusterResponse;
  try {
    cl = await pollCluster(windowParams(host.sel), host.signal, progress.update);
  } catch (err) {
    if (host.signal.aborted || (err as Error).name === "AbortError") return;
    progress.el.remove();
    const notice = h("div", { class: "notice error", id: "comm-cluster-error", role: "alert" }, h("strong", { text: "Cannot compare the ranks. " }), errorText(err));
    host.el.append(notice);
    host.setState("loaded");
    return;
  }
  if (host.signal.aborted) return;
  if (!data.communication.collectives.length && !cl.collectives.length) {
    showNoCommunication(host, data);
    return;
  }
  const chosen = host.el.querySelector<HTMLSelectElement>("#comm-step");
  render(host, { data, cl, step: chosen && chosen.value !== "" ? Number(chosen.value) : null });
  host.setState("loaded");
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Computing the communication of this window…");
  const data = await fetchOr<CommunicationResponse>(host, "communication", windowParams(host.sel));
  if (!data || host.signal.aborted) return;
  const multi = (host.run?.workers.length ?? 1) > 1;
  if (!data.communication.collectives.length && !multi) showNoCommunication(host, data);
  else await showCluster(host, data);
}

export const communicationView: ViewDef = {
  id: "communication",
  title: "Communication",
  mount(host) {
    void load(host);
  },
};
