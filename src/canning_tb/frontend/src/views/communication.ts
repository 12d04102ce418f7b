// Communication: the collectives of this window, and across the ranks of the run (route /cluster,
// computed by analysis/cluster.py): step split per rank, wait vs transfer, slow-rank findings and
// the communication matrix.
import { windowParams } from "../api";
import { RawChart, tipLines } from "../chart";
import { h } from "../dom";
import { fixed2, int, mb, ms, pct } from "../format";
import { card, errorText, fetchOr, kvTable, pollCluster, problemsList, rankProgress, SortTable, type Col, type Problem } from "./common";
import { showEmpty, showLoading, type ViewDef, type ViewHost } from "./view";

interface Collective {
  kind: string;
  group: string;
  calls: number;
  total_ns: number;
  min_ns: number;
  max_ns: number;
  bytes: number;
  bandwidth_gbps: number;
  wait_ns: number;
  transfer_ns: number;
}
interface CommResponse {
  problems: Problem[];
  info: { world_size: number; rank: number };
  communication: {
    total_ns: number;
    not_overlapped_ns: number;
    overlapped_ns: number;
    wait_ns: number;
    transfer_ns: number;
    not_overlapped_share: number;
    collectives: Collective[];
    calls: unknown[];
  };
}
interface RankRow {
  rank: number;
  steps: number;
  step_ns: number;
  compute_ns: number;
  overlapped_ns: number;
  communication_ns: number;
  other_ns: number;
  wait_ns: number;
  transfer_ns: number;
}
interface SlowRank {
  metric: string;
  max_ns: number;
  min_ns: number;
  mean_ns: number;
  ratio: number;
  max_rank: number;
  min_rank: number;
  flagged: boolean;
  slowest_rank: number;
}
interface Cell {
  src: number;
  dst: number;
  transport: string;
  bytes: number;
  time_ns: number;
  bandwidth_gbps: number;
}
interface ClusterResponse {
  window_index: number;
  workers: { worker: string; rank: number; window: string }[];
  problems: { worker: string; window: string; message: string }[];
  ranks: RankRow[];
  collectives: { kind: string; group: string; calls: number; total_ns: number; wait_ns: number; transfer_ns: number }[];
  slow_ranks: SlowRank[];
  matrix: Cell[];
  matrix_source: string;
  compute_source?: string; // "host" on CPU-only runs: the host operators are the computation
  unmatched: { kind: string; group: string; calls: Record<string, number> }[];
}

const COLL_COLS: Col<Collective>[] = [
  { key: "kind", label: "Kind", value: (c) => c.kind },
  { key: "group", label: "Group", value: (c) => c.group, tip: "Process group" },
  { key: "calls", label: "Calls", num: true, value: (c) => c.calls, fmt: (c) => int(c.calls) },
  { key: "total", label: "Total (ms)", num: true, value: (c) => c.total_ns, fmt: (c) => ms(c.total_ns) },
  { key: "avg", label: "Avg (ms)", num: true, value: (c) => (c.calls ? c.total_ns / c.calls : -1), fmt: (c) => ms(c.calls ? c.total_ns / c.calls : -1) },
  { key: "max", label: "Max (ms)", num: true, value: (c) => c.max_ns, fmt: (c) => ms(c.max_ns) },
  { key: "bytes", label: "Size (MB)", num: true, value: (c) => c.bytes, fmt: (c) => mb(c.bytes) },
  { key: "bw", label: "Bandwidth (GB/s)", num: true, value: (c) => c.bandwidth_gbps, fmt: (c) => fixed2(c.bandwidth_gbps), tip: "Bytes / transfer time, 1 GB = 1e9 bytes" },
  { key: "wait", label: "Wait (ms)", num: true, value: (c) => c.wait_ns, fmt: (c) => ms(c.wait_ns), tip: "Time waiting for the other ranks" },
  { key: "transfer", label: "Transfer (ms)", num: true, value: (c) => c.transfer_ns, fmt: (c) => ms(c.transfer_ns), tip: "Time moving data" },
];

const METRIC_TEXT: Record<string, string> = {
  computing: "Computing (compute + overlapped)",
  communication: "Communication not overlapped",
  free: "Free (neither computing nor communicating)",
};

function clusterSection(host: ViewHost, cl: ClusterResponse, charts: RawChart[]): HTMLElement[] {
  const rankName = new Map(cl.workers.map((w) => [w.rank, w.worker]));
  const out: HTMLElement[] = [];
  const list = h("p", { id: "comm-ranks", class: "muted", text: `Ranks: ${cl.ranks.map((r) => r.rank).join(", ")} (window ${cl.window_index + 1} of each rank)` });
  if (cl.ranks.length < 2) {
    out.push(card("Across ranks", list, h("p", { class: "muted", text: "Only one rank in this run: the comparison across ranks (wait vs transfer, slow ranks, matrix) needs the profiles of two or more ranks in the same run folder." })));
    return out;
  }
  const labels = cl.ranks.map((r) => `rank ${r.rank}`);
  const computeLabel = cl.compute_source === "host" ? "Compute (host ops)" : "Compute";
  const splitEl = h("div", { id: "comm-rank-chart", class: "chart", "data-ranks": cl.ranks.length });
  const waitEl = h("div", { id: "comm-wait-chart", class: "chart" });
  const rankTable = new SortTable<RankRow>(
    "comm-rank-table",
    [
      { key: "rank", label: "Rank", num: true, value: (r) => r.rank, fmt: (r) => String(r.rank) },
      { key: "worker", label: "Worker", value: (r) => rankName.get(r.rank) ?? "" },
      { key: "step", label: "Step (ms)", num: true, value: (r) => r.step_ns, fmt: (r) => ms(r.step_ns) },
      { key: "compute", label: `${computeLabel} (ms)`, num: true, value: (r) => r.compute_ns, fmt: (r) => ms(r.compute_ns) },
      { key: "overlapped", label: "Overlapped (ms)", num: true, value: (r) => r.overlapped_ns, fmt: (r) => ms(r.overlapped_ns) },
      { key: "comm", label: "Communication (ms)", num: true, value: (r) => r.communication_ns, fmt: (r) => ms(r.communication_ns), tip: "Not overlapped" },
      { key: "other", label: "Other (ms)", num: true, value: (r) => r.other_ns, fmt: (r) => ms(r.other_ns), tip: "Memcpy, runtime, data loading, host, idle" },
      { key: "wait", label: "Wait (ms)", num: true, value: (r) => r.wait_ns, fmt: (r) => ms(r.wait_ns) },
      { key: "transfer", label: "Transfer (ms)", num: true, value: (r) => r.transfer_ns, fmt: (r) => ms(r.transfer_ns) },
    ],
    "rank",
    false,
  );
  rankTable.setRows(cl.ranks);

  const findings = h(
    "ul",
    { id: "comm-slow", class: "suggestions" },
    ...cl.slow_ranks.map((s) =>
      h(
        "li",
        { class: s.flagged ? "sev-warning" : "sev-info", "data-metric": s.metric, "data-rank": s.slowest_rank },
        h("span", { class: "badge", text: s.flagged ? "slow rank" : "balanced" }),
        h("strong", { text: `${METRIC_TEXT[s.metric] ?? s.metric}: ${s.flagged ? `rank ${s.slowest_rank} is the slow rank` : "balanced across ranks"}` }),
        h("p", {
          text: `max ${ms(s.max_ns)} ms (rank ${s.max_rank}), min ${ms(s.min_ns)} ms (rank ${s.min_rank}), spread ${pct(s.ratio)}% of the mean ${ms(s.mean_ns)} ms${s.flagged ? " (over 5%)" : ""}.${s.metric === "communication" && s.flagged ? " The rank with the least communication is the one the others wait for." : ""}`,
        }),
      ),
    ),
  );
  const unmatched = cl.unmatched.length
    ? h("p", { class: "muted", text: `Call counts differ between ranks for ${cl.unmatched.map((u) => `${u.kind} (${u.group})`).join(", ")}: matched on the common calls only.` })
    : null;
  out.push(
    card("Across ranks: average step (ms)", list, splitEl),
    h("div", { class: "grid2" }, card("Wait vs transfer per rank (ms)", waitEl), card("Slow ranks", findings, unmatched)),
    card("Ranks", h("div", { class: "table-wrap short" }, rankTable.el)),
  );

  let matrixEl: HTMLElement | null = null;
  if (cl.matrix.length) {
    matrixEl = h("div", { id: "comm-matrix", class: "chart", "data-cells": cl.matrix.length });
    out.push(
      card(
        cl.matrix_source === "links" ? "Communication matrix (MB sent, from communication_matrix.json)" : "Communication matrix (MB sent, ring estimate from collective sizes)",
        matrixEl,
      ),
    );
  }

  // draw once in the document
  queueMicrotask(() => {
    if (host.signal.aborted) return;
    const split = new RawChart(splitEl);
    charts.push(split);
    const cats: [keyof RankRow, string, string][] = [
      ["compute_ns", computeLabel, "#388e3c"],
      ["overlapped_ns", "Overlapped", "#8bc34a"],
      ["communication_ns", "Communication (not overlapped)", "#c62828"],
      ["other_ns", "Other / idle", "#9e9e9e"],
    ];
    split.set({
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, confine: true, formatter: (ps: { dataIndex: number }[]) => {
        const r = cl.ranks[ps[0]?.dataIndex ?? 0];
        return tipLines(`rank ${r.rank}: step ${ms(r.step_ns)} ms`, cats.map(([k, l]) => `${l}: ${ms(r[k])} ms`));
      } },
      legend: { top: 0 },
      grid: { left: 8, right: 24, top: 32, bottom: 24, containLabel: true },
      xAxis: { type: "value", name: "ms", nameLocation: "middle", nameGap: 22 },
      yAxis: { type: "category", data: labels, inverse: true },
      series: cats.map(([k, l, color]) => ({ type: "bar", name: l, stack: "rank", itemStyle: { color }, barMaxWidth: 28, data: cl.ranks.map((r) => r[k] / 1e6) })),
    });
    const wt = new RawChart(waitEl);
    charts.push(wt);
    wt.set({
      tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, confine: true, formatter: (ps: { dataIndex: number }[]) => {
        const r = cl.ranks[ps[0]?.dataIndex ?? 0];
        return tipLines(`rank ${r.rank}`, [`Wait: ${ms(r.wait_ns)} ms`, `Transfer: ${ms(r.transfer_ns)} ms`]);
      } },
      legend: { top: 0 },
      grid: { left: 8, right: 24, top: 32, bottom: 24, containLabel: true },
      xAxis: { type: "category", data: labels },
      yAxis: { type: "value", name: "ms" },
      series: [
        { type: "bar", name: "Wait", itemStyle: { color: "#f57c00" }, barMaxWidth: 36, data: cl.ranks.map((r) => r.wait_ns / 1e6) },
        { type: "bar", name: "Transfer", itemStyle: { color: "#1976d2" }, barMaxWidth: 36, data: cl.ranks.map((r) => r.transfer_ns / 1e6) },
      ],
    });
    if (matrixEl) {
      const ranks = [...new Set(cl.matrix.flatMap((c) => [c.src, c.dst]))].sort((a, b) => a - b);
      const sum = new Map<string, { bytes: number; time: number; transports: Set<string> }>();
      for (const c of cl.matrix) {
        const k = `${c.src},${c.dst}`;
        const v = sum.get(k) ?? { bytes: 0, time: 0, transports: new Set<string>() };
        v.bytes += Math.max(0, c.bytes);
        v.time += Math.max(0, c.time_ns);
        v.transports.add(c.transport);
        sum.set(k, v);
      }
      const data = [...sum.entries()].map(([k, v]) => {
        const [s, d] = k.split(",").map(Number);
        return [ranks.indexOf(d), ranks.indexOf(s), +(v.bytes / 1048576).toFixed(1)];
      });
      const max = Math.max(1, ...data.map((d) => d[2]));
      const mx = new RawChart(matrixEl);
      charts.push(mx);
      mx.set({
        tooltip: { confine: true, formatter: (p: { value: [number, number, number] }) => {
          const s = ranks[p.value[1]];
          const d = ranks[p.value[0]];
          const v = sum.get(`${s},${d}`);
          return tipLines(`rank ${s} → rank ${d}`, [`${p.value[2].toFixed(1)} MB`, v && v.time > 0 ? `${ms(v.time)} ms, ${fixed2(v.bytes / v.time)} GB/s` : "time unknown", `transport: ${v ? [...v.transports].join(", ") : ""}`]);
        } },
        grid: { left: 8, right: 80, top: 16, bottom: 40, containLabel: true },
        xAxis: { type: "category", name: "to", data: ranks.map((r) => `rank ${r}`), splitArea: { show: true } },
        yAxis: { type: "category", name: "from", data: ranks.map((r) => `rank ${r}`), splitArea: { show: true } },
        visualMap: { min: 0, max, calculable: true, orient: "vertical", right: 0, top: "middle", inRange: { color: ["#fff3e0", "#f57c00", "#bf360c"] } },
        series: [{ type: "heatmap", data, label: { show: true, formatter: (p: { value: number[] }) => `${p.value[2]}` } }],
      });
    }
  });
  return out;
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Computing the communication of this window…");
  const sel = host.sel;
  const data = await fetchOr<CommResponse>(host, "communication", windowParams(sel));
  if (!data || host.signal.aborted) return;
  const comm = data.communication;
  const multi = (host.run?.workers.length ?? 1) > 1;
  const empty = () =>
    showEmpty(
      host,
      "No communication in this window",
      `This window has no collective (NCCL / HCCL / Gloo all_reduce, all_gather, send/recv…)${data.info.world_size > 1 ? "" : ": it looks like a single-rank run (world size 1)"}.`,
      "Profile a distributed run (torch.distributed, DDP / FSDP) and write every rank's profile into the same run folder to compare the ranks here.",
    );
  if (!comm.collectives.length && !multi) {
    empty();
    return;
  }
  const charts: RawChart[] = [];
  host.signal.addEventListener("abort", () => charts.forEach((c) => c.dispose()));
  const collTable = new SortTable<Collective>("comm-table", COLL_COLS, "total", true, "This rank has no collective in this window.");
  collTable.setRows(comm.collectives);
  const summary = kvTable("comm-summary", [
    ["Communication (ms)", ms(comm.total_ns), "Union of the collectives' time"],
    ["Not overlapped (ms)", ms(comm.not_overlapped_ns)],
    ["Overlapped with compute (ms)", ms(comm.overlapped_ns)],
    ["Not overlapped of the step (%)", pct(comm.not_overlapped_share)],
    ["Wait (ms)", ms(comm.wait_ns)],
    ["Transfer (ms)", ms(comm.transfer_ns)],
  ]);
  const parts: HTMLElement[] = [];
  const pl = problemsList(data.problems, "comm-problems");
  if (pl) parts.push(pl);
  parts.push(
    card(`Collectives of rank ${data.info.rank >= 0 ? data.info.rank : "?"}`, h("div", { class: "table-wrap short" }, collTable.el)),
    card("This rank", summary),
  );
  const progress = rankProgress("comm-progress");
  progress.update(0, host.run?.workers.length ?? 1);
  host.el.replaceChildren(...parts, progress.el);
  let cl: ClusterResponse;
  try {
    cl = await pollCluster<ClusterResponse>(windowParams(sel), host.signal, progress.update);
  } catch (e) {
    if (host.signal.aborted || (e as Error).name === "AbortError") return;
    parts.push(h("div", { class: "notice error", id: "comm-cluster-error", role: "alert" }, h("strong", { text: "Cannot compare the ranks. " }), errorText(e)));
    host.el.replaceChildren(...parts);
    host.setState("loaded");
    return;
  }
  if (host.signal.aborted) return;
  if (!comm.collectives.length && !cl.collectives.length) {
    empty();
    return;
  }
  const probs = cl.problems.length
    ? h("ul", { class: "problems" }, ...cl.problems.map((p) => h("li", { class: "error", text: `${p.worker} / ${p.window}: ${p.message}` })))
    : null;
  if (probs) parts.push(probs);
  host.el.replaceChildren(...parts, ...clusterSection(host, cl, charts));
  host.setState("loaded");
}

export const communicationView: ViewDef = {
  id: "communication",
  title: "Communication",
  mount(host) {
    void load(host);
  },
};
