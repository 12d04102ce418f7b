// Communication: the collectives of this window, and across the ranks of the run (route /cluster,
// computed by analysis/cluster.py): step split per rank, wait vs transfer, slow-rank findings and
// the communication matrix.
import { windowParams, type ClusterResponse, type CollectiveStat, type CommunicationResponse, type MatrixCell, type RankRow } from "../api";
import { RawChart, tipLines } from "../chart";
import { h } from "../dom";
import { fixed2, int, mb, ms, pct } from "../format";
import { card, errorText, fetchOr, kvTable, pollCluster, problemsList, rankProgress, SortTable, type Col } from "./common";
import { drawBinnedMatrix, RANKS_AS_ROWS, spreadParts } from "./ranks_spread";
import { openTimelineAt } from "./timeline_link";
import { showEmpty, showLoading, type ViewDef, type ViewHost } from "./view";

type Collective = CollectiveStat;

const COLL_COLS: Col<Collective>[] = [
  { key: "kind", label: "Kind", value: (c) => c.kind },
  { key: "group", label: "Group", value: (c) => c.group, tip: "Process group" },
  { key: "calls", label: "Calls", num: true, value: (c) => c.calls, fmt: (c) => int(c.calls) },
  { key: "total", label: "Total (ms)", num: true, value: (c) => c.total_ns, fmt: (c) => ms(c.total_ns) },
  { key: "avg", label: "Avg (ms)", num: true, value: (c) => (c.calls ? c.total_ns / c.calls : -1), fmt: (c) => ms(c.calls ? c.total_ns / c.calls : -1) },
  { key: "max", label: "Max (ms)", num: true, value: (c) => c.max_ns, fmt: (c) => ms(c.max_ns) },
  { key: "bytes", label: "Size (MB)", num: true, value: (c) => c.bytes, fmt: (c) => mb(c.bytes) },
  { key: "bw", label: "Bandwidth (GB/s)", num: true, value: (c) => c.bandwidth_gbps ?? -1, fmt: (c) => fixed2(c.bandwidth_gbps ?? -1), tip: "Bytes / transfer time, 1 GB = 1e9 bytes" },
  { key: "wait", label: "Wait (ms)", num: true, value: (c) => c.wait_ns, fmt: (c) => ms(c.wait_ns), tip: "Time waiting for the other ranks" },
  { key: "transfer", label: "Transfer (ms)", num: true, value: (c) => c.transfer_ns, fmt: (c) => ms(c.transfer_ns), tip: "Time moving data" },
];

const METRIC_TEXT: Record<string, string> = {
  computing: "Computing (compute + overlapped)",
  communication: "Communication not overlapped",
  free: "Free (neither computing nor communicating)",
};

function rankTable(cl: ClusterResponse, computeLabel: string): SortTable<RankRow> {
  const rankName = new Map(cl.workers.map((w) => [w.rank, w.worker]));
  const table = new SortTable<RankRow>(
    "comm-rank-table",
    [
      { key: "rank", label: "Rank", num: true, value: (row) => row.rank, fmt: (row) => String(row.rank) },
      { key: "worker", label: "Worker", value: (row) => rankName.get(row.rank) ?? "" },
      { key: "step", label: "Step (ms)", num: true, value: (row) => row.step_ns, fmt: (row) => ms(row.step_ns) },
      { key: "compute", label: `${computeLabel} (ms)`, num: true, value: (row) => row.compute_ns, fmt: (row) => ms(row.compute_ns) },
      { key: "overlapped", label: "Overlapped (ms)", num: true, value: (row) => row.overlapped_ns, fmt: (row) => ms(row.overlapped_ns) },
      { key: "comm", label: "Communication (ms)", num: true, value: (row) => row.communication_ns, fmt: (row) => ms(row.communication_ns), tip: "Not overlapped" },
      { key: "other", label: "Other (ms)", num: true, value: (row) => row.other_ns, fmt: (row) => ms(row.other_ns), tip: "Memcpy, runtime, data loading, host, idle" },
      { key: "wait", label: "Wait (ms)", num: true, value: (row) => row.wait_ns, fmt: (row) => ms(row.wait_ns) },
      { key: "transfer", label: "Transfer (ms)", num: true, value: (row) => row.transfer_ns, fmt: (row) => ms(row.transfer_ns) },
    ],
    "rank",
    false,
  );
  table.setRows(cl.ranks);
  return table;
}

function slowRankFindings(cl: ClusterResponse): HTMLElement {
  return h(
    "ul",
    { id: "comm-slow", class: "suggestions" },
    ...cl.slow_ranks.map((slow) => {
      const verdict = slow.flagged ? `rank ${slow.slowest_rank} is the slow rank` : "balanced across ranks";
      const waitedFor = slow.metric === "communication" && slow.flagged ? " The rank with the least communication is the one the others wait for." : "";
      const detail = `max ${ms(slow.max_ns)} ms (rank ${slow.max_rank}), min ${ms(slow.min_ns)} ms (rank ${slow.min_rank}), spread ${pct(slow.ratio)}% of the mean ${ms(slow.mean_ns)} ms${slow.flagged ? " (over 5%)" : ""}.${waitedFor}`;
      return h(
        "li",
        { class: slow.flagged ? "sev-warning" : "sev-info", "data-metric": slow.metric, "data-rank": slow.slowest_rank },
        h("span", { class: "badge", text: slow.flagged ? "slow rank" : "balanced" }),
        h("strong", { text: `${METRIC_TEXT[slow.metric] ?? slow.metric}: ${verdict}` }),
        h("p", { text: detail }),
      );
    }),
  );
}

function drawRankSplit(el: HTMLElement, cl: ClusterResponse, computeLabel: string): RawChart {
  const chart = new RawChart(el);
  const cats: [keyof RankRow, string, string][] = [
    ["compute_ns", computeLabel, "#388e3c"],
    ["overlapped_ns", "Overlapped", "#8bc34a"],
    ["communication_ns", "Communication (not overlapped)", "#c62828"],
    ["other_ns", "Other / idle", "#9e9e9e"],
  ];
  const tooltip = (index: number) => {
    const row = cl.ranks[index];
    return tipLines(`rank ${row.rank}: step ${ms(row.step_ns)} ms`, cats.map(([key, label]) => `${label}: ${ms(row[key])} ms`));
  };
  chart.set({
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, confine: true, formatter: (ps: { dataIndex: number }[]) => tooltip(ps[0]?.dataIndex ?? 0) },
    legend: { top: 0 },
    grid: { left: 8, right: 24, top: 32, bottom: 24, containLabel: true },
    xAxis: { type: "value", name: "ms", nameLocation: "middle", nameGap: 22 },
    yAxis: { type: "category", data: cl.ranks.map((row) => `rank ${row.rank}`), inverse: true },
    series: cats.map(([key, label, color]) => ({ type: "bar", name: label, stack: "rank", itemStyle: { color }, barMaxWidth: 28, data: cl.ranks.map((row) => row[key] / 1e6) })),
  });
  return chart;
}

function drawWaitTransfer(el: HTMLElement, cl: ClusterResponse): RawChart {
  const chart = new RawChart(el);
  const tooltip = (index: number) => {
    const row = cl.ranks[index];
    return tipLines(`rank ${row.rank}`, [`Wait: ${ms(row.wait_ns)} ms`, `Transfer: ${ms(row.transfer_ns)} ms`]);
  };
  chart.set({
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, confine: true, formatter: (ps: { dataIndex: number }[]) => tooltip(ps[0]?.dataIndex ?? 0) },
    legend: { top: 0 },
    grid: { left: 8, right: 24, top: 32, bottom: 24, containLabel: true },
    xAxis: { type: "category", data: cl.ranks.map((row) => `rank ${row.rank}`) },
    yAxis: { type: "value", name: "ms" },
    series: [
      { type: "bar", name: "Wait", itemStyle: { color: "#f57c00" }, barMaxWidth: 36, data: cl.ranks.map((row) => row.wait_ns / 1e6) },
      { type: "bar", name: "Transfer", itemStyle: { color: "#1976d2" }, barMaxWidth: 36, data: cl.ranks.map((row) => row.transfer_ns / 1e6) },
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
    return tipLines(`rank ${cell.src} → rank ${cell.dst}`, [`${value[2].toFixed(1)} MB`, time, `transport: ${cell.transports.join(", ")}`]);
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
    cl.matrix_source === "links" ? "Communication matrix (MB sent, from communication_matrix.json)" : "Communication matrix (MB sent, ring estimate from collective sizes)";
  return card(title, el);
}

function clusterSection(host: ViewHost, cl: ClusterResponse, charts: RawChart[]): HTMLElement[] {
  const list = h("p", { id: "comm-ranks", class: "muted", text: `Ranks: ${cl.ranks.map((row) => row.rank).join(", ")} (window ${cl.window_index + 1} of each rank)` });
  if (cl.ranks.length < 2) {
    const why = "Only one rank in this run: the comparison across ranks (wait vs transfer, slow ranks, matrix) needs the profiles of two or more ranks in the same run folder.";
    return [card("Across ranks", list, h("p", { class: "muted", text: why }))];
  }
  const computeLabel = cl.compute_source === "host" ? "Compute (host ops)" : "Compute";
  const splitEl = h("div", { id: "comm-rank-chart", class: "chart", "data-ranks": cl.ranks.length });
  const waitEl = h("div", { id: "comm-wait-chart", class: "chart" });
  const matrixEl = cl.matrix_cells.length ? h("div", { id: "comm-matrix", class: "chart", "data-cells": cl.matrix_cells.length }) : null;
  const unmatched = cl.unmatched.length
    ? h("p", { class: "muted", text: `Call counts differ between ranks for ${cl.unmatched.map((u) => `${u.kind} (${u.group})`).join(", ")}: matched on the common calls only.` })
    : null;
  if (cl.ranks.length > RANKS_AS_ROWS) return manyRanks(host, cl, charts, computeLabel, unmatched);
  const out = [
    card("Across ranks: average step (ms)", list, splitEl),
    h("div", { class: "grid2" }, card("Wait vs transfer per rank (ms)", waitEl), card("Slow ranks", slowRankFindings(cl), unmatched)),
    card("Ranks", h("div", { class: "table-wrap short" }, rankTable(cl, computeLabel).el)),
    ...(matrixEl ? [matrixCard(cl, matrixEl)] : []),
  ];
  // draw once in the document
  queueMicrotask(() => {
    if (host.signal.aborted) return;
    charts.push(drawRankSplit(splitEl, cl, computeLabel), drawWaitTransfer(waitEl, cl));
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
  const every = h("details", { id: "comm-every-rank" }, h("summary", { text: `Every rank (${cl.ranks.length} rows)` }), h("div", { class: "table-wrap short" }, rankTable(cl, computeLabel).el));
  const binText = binned ? `, ${cl.matrix_bins.ranks_per_bin} ranks a cell` : "";
  return [
    card(`Across ${cl.ranks.length} ranks (window ${cl.window_index + 1} of each)`, ...spreadParts(cl, "comm", charts, host.signal)),
    card("Slow ranks", slowRankFindings(cl), unmatched),
    ...(matrixEl ? [card(`Communication matrix (MB sent${binText}; ${cl.matrix_source === "links" ? "communication_matrix.json" : "ring estimate"})`, matrixEl)] : []),
    card("Ranks", every),
  ];
}

function showNoCommunication(host: ViewHost, data: CommunicationResponse): void {
  showEmpty(
    host,
    "No communication in this window",
    `This window has no collective (NCCL / HCCL / Gloo all_reduce, all_gather, send/recv…)${data.info.world_size > 1 ? "" : ": it looks like a single-rank run (world size 1)"}.`,
    "Profile a distributed run (torch.distributed, DDP / FSDP) and write every rank's profile into the same run folder to compare the ranks here.",
  );
}

/** This rank's part: the problems, its collectives and its summary. */
function rankParts(host: ViewHost, data: CommunicationResponse): HTMLElement[] {
  const comm = data.communication;
  const collTable = new SortTable<Collective>("comm-table", COLL_COLS, "total", true, "This rank has no collective in this window.", undefined, {
    decorateRow: (collective, row) => {
      row.title = "Double-click: the slowest call of this kind in the Timeline";
      row.ondblclick = () => openTimelineAt(host.store, collective.kind, "collective");
      return null;
    },
  });
  collTable.setRows(comm.collectives);
  const summary = kvTable("comm-summary", [
    ["Communication (ms)", ms(comm.total_ns), "Union of the collectives' time"],
    ["Not overlapped (ms)", ms(comm.not_overlapped_ns)],
    ["Overlapped with compute (ms)", ms(comm.overlapped_ns)],
    ["Not overlapped of the step (%)", pct(comm.not_overlapped_share ?? -1)],
    ["Wait (ms)", ms(comm.wait_ns)],
    ["Transfer (ms)", ms(comm.transfer_ns)],
  ]);
  return [
    ...[problemsList(data.problems, "comm-problems")].filter((el): el is HTMLElement => !!el),
    card(`Collectives of rank ${data.info.rank >= 0 ? data.info.rank : "?"}`, h("div", { class: "table-wrap short" }, collTable.el)),
    card("This rank", summary),
  ];
}

/** The cross-rank part, once /cluster has digested every rank's window (polled with progress). */
async function showCluster(host: ViewHost, data: CommunicationResponse, parts: HTMLElement[]): Promise<void> {
  const progress = rankProgress("comm-progress");
  progress.update(0, host.run?.workers.length ?? 1);
  host.el.replaceChildren(...parts, progress.el);
  let cl: ClusterResponse;
  try {
    cl = await pollCluster(windowParams(host.sel), host.signal, progress.update);
  } catch (err) {
    if (host.signal.aborted || (err as Error).name === "AbortError") return;
    const notice = h("div", { class: "notice error", id: "comm-cluster-error", role: "alert" }, h("strong", { text: "Cannot compare the ranks. " }), errorText(err));
    host.el.replaceChildren(...parts, notice);
    host.setState("loaded");
    return;
  }
  if (host.signal.aborted) return;
  if (!data.communication.collectives.length && !cl.collectives.length) {
    showNoCommunication(host, data);
    return;
  }
  const problems = cl.problems.length
    ? [h("ul", { class: "problems" }, ...cl.problems.map((problem) => h("li", { class: "error", text: `${problem.worker} / ${problem.window}: ${problem.message}` })))]
    : [];
  const charts: RawChart[] = [];
  host.signal.addEventListener("abort", () => charts.forEach((chart) => chart.dispose()));
  host.el.replaceChildren(...parts, ...problems, ...clusterSection(host, cl, charts));
  host.setState("loaded");
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Computing the communication of this window…");
  const data = await fetchOr<CommunicationResponse>(host, "communication", windowParams(host.sel));
  if (!data || host.signal.aborted) return;
  const multi = (host.run?.workers.length ?? 1) > 1;
  if (!data.communication.collectives.length && !multi) showNoCommunication(host, data);
  else await showCluster(host, data, rankParts(host, data));
}

export const communicationView: ViewDef = {
  id: "communication",
  title: "Communication",
  mount(host) {
    void load(host);
  },
};
