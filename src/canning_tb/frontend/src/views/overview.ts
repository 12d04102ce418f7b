// Overview: the performance summary of one window, the step-time breakdown per step and on
// average, the devices and environment, and the suggestions (rule hits) with their numbers.
import { windowParams } from "../api";
import { RawChart, tipLines } from "../chart";
import { h } from "../dom";
import { bytes, int, ms, pct } from "../format";
import { card, errorText, fetchOr, kvTable, pollCluster, problemsList, rankProgress, type Problem } from "./common";
import { showEmpty, showLoading, type ViewDef, type ViewHost } from "./view";

interface Breakdown {
  total_ns: number;
  compute_ns: number;
  overlapped_ns: number;
  communication_ns: number;
  memcpy_ns: number;
  memset_ns: number;
  runtime_ns: number;
  dataloader_ns: number;
  host_ns: number;
  idle_ns: number;
}
interface Step {
  number: number;
  start_ns: number;
  dur_ns: number;
  breakdown: Breakdown;
}
interface Device {
  kind: string;
  index: number;
  name: string;
  memory_bytes: number;
  compute_capability: string;
  properties: Record<string, string>;
}
interface RuleHit {
  rule: string;
  severity: string;
  title: string;
  detail: string;
  value: number;
}
export interface OverviewResponse {
  info: {
    format: string;
    rank: number;
    world_size: number;
    worker: string;
    host: string;
    pid: number;
    duration_ns: number;
    devices: Device[];
    environment: Record<string, string>;
  };
  problems: Problem[];
  steps: Step[];
  average: Breakdown;
  scalars: Record<string, number | null>;
  rule_hits: RuleHit[];
}
interface OpRow {
  name: string;
  host_self_ns: number;
  device_self_ns: number;
}
interface OperatorsResponse {
  has_device: boolean;
  rows: OpRow[];
}

export const CATEGORIES: [keyof Breakdown, string, string, string][] = [
  ["compute_ns", "Compute", "#388e3c", "Device compute not overlapped by communication"],
  ["overlapped_ns", "Overlapped", "#8bc34a", "Communication hidden behind device compute"],
  ["communication_ns", "Communication", "#c62828", "Communication not overlapped by compute"],
  ["memcpy_ns", "Memcpy", "#1976d2", "Memory copies, device not computing"],
  ["memset_ns", "Memset", "#64b5f6", "Memory sets, device not computing"],
  ["runtime_ns", "Runtime", "#7b1fa2", "Kernel launch / runtime API while the device is idle"],
  ["dataloader_ns", "DataLoader", "#f57c00", "Data loading"],
  ["host_ns", "Host", "#fbc02d", "Host operators running while the device is idle (CPU-only: the operator time)"],
  ["idle_ns", "Idle", "#9e9e9e", "Nothing recorded"],
];

const SEVERITY_ORDER: Record<string, number> = { critical: 0, warning: 1, info: 2 };

function share(part: number, total: number): number {
  return total > 0 && part >= 0 ? part / total : -1;
}

function deviceOf(name: string, devices: Device[]): Device | undefined {
  const m = /^([a-z]+):(\d+)$/i.exec(name);
  if (!m) return undefined;
  return devices.find((d) => d.kind.toLowerCase() === m[1].toLowerCase() && d.index === Number(m[2]));
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Computing the overview of this window… (the first open of a big trace takes a while)");
  const [ov, ops] = await Promise.all([
    fetchOr<OverviewResponse>(host, "overview", windowParams(host.sel)),
    fetchOr<OperatorsResponse>(host, "operators", { ...windowParams(host.sel), group_by: "name" }),
  ]);
  if (!ov || !ops || host.signal.aborted) return;
  const avg = ov.average;
  if (!ov.steps.length || avg.total_ns <= 0) {
    showEmpty(
      host,
      "No step time in this window",
      "The window holds no ProfilerStep# range and no timed activity, so there is no step time to break down.",
      "Call prof.step() once per training step inside the profiler (schedule=torch.profiler.schedule(...)) to get one row per step.",
    );
    return;
  }
  const charts: RawChart[] = [];
  host.signal.addEventListener("abort", () => charts.forEach((c) => c.dispose()));
  host.el.replaceChildren();

  // -- performance summary ---------------------------------------------------------------
  const totalSteps = ov.steps.reduce((s, x) => s + Math.max(0, x.dur_ns), 0);
  const rows: [string, string, string?][] = [
    ["Steps", int(ov.steps.length), "ProfilerStep# ranges in the window"],
    ["Total step time (ms)", ms(totalSteps), "Sum of the step durations"],
    ["Average step time (ms)", ms(avg.total_ns)],
    ["Device compute share (%)", pct(share(avg.compute_ns + avg.overlapped_ns, avg.total_ns)), "Compute, overlapped communication included, of the average step"],
    ["Communication not hidden (%)", pct(share(avg.communication_ns, avg.total_ns)), "Communication not overlapped by compute, of the average step"],
    ["DataLoader share (%)", pct(share(avg.dataloader_ns, avg.total_ns))],
  ];
  for (const [k, v] of Object.entries(ov.scalars)) {
    const m = /^peak_memory_bytes\/(.+)$/.exec(k);
    if (!m || v === null) continue;
    const dev = deviceOf(m[1], ov.info.devices);
    const cap = dev && dev.memory_bytes > 0 ? dev.memory_bytes : -1;
    rows.push([
      `Memory peak, ${m[1]}`,
      cap > 0 ? `${bytes(v)} of ${bytes(cap)} (${pct(v / cap)}%)` : `${bytes(v)} (capacity unknown)`,
      "Peak allocated memory vs the device capacity",
    ]);
  }
  const metric: keyof OpRow = ops.has_device ? "device_self_ns" : "host_self_ns";
  const opTotal = ops.rows.reduce((s, r) => s + Math.max(0, r[metric] as number), 0);
  const top = ops.rows.filter((r) => !r.name.startsWith("ProfilerStep#")).sort((a, b) => (b[metric] as number) - (a[metric] as number))[0];
  if (top && opTotal > 0) {
    rows.push([
      `Slowest operator (by ${ops.has_device ? "device" : "host"} self time)`,
      `${top.name}: ${ms(top[metric] as number)} ms, ${pct((top[metric] as number) / opTotal)}%`,
      `Share of all operators' ${ops.has_device ? "device" : "host"} self time`,
    ]);
  }
  const perf = kvTable("ov-perf", rows);

  // -- suggestions --------------------------------------------------------------------------
  const hits = ov.rule_hits.slice().sort((a, b) => (SEVERITY_ORDER[a.severity] ?? 3) - (SEVERITY_ORDER[b.severity] ?? 3));
  const suggestions = hits.length
    ? h(
        "ul",
        { id: "ov-suggestions", class: "suggestions" },
        ...hits.map((r) =>
          h("li", { class: `sev-${r.severity}`, "data-rule": r.rule }, h("span", { class: "badge", text: r.severity }), h("strong", { text: r.title }), h("p", { text: r.detail })),
        ),
      )
    : h("p", { id: "ov-suggestions", class: "muted", text: "No suggestion: no rule found a problem in this window." });

  // -- step chart ------------------------------------------------------------------------------
  const stepChartEl = h("div", { id: "ov-steps-chart", class: "chart", "data-steps": ov.steps.length });
  const avgChartEl = h("div", { id: "ov-avg-chart", class: "chart small" });

  // -- average breakdown table -------------------------------------------------------------------
  const avgTable = h("table", { id: "ov-avg", class: "data-table" });
  avgTable.append(h("thead", {}, h("tr", {}, h("th", { text: "Category" }), h("th", { class: "num", text: "Time (ms)" }), h("th", { class: "num", text: "Share (%)" }))));
  const tb = h("tbody");
  for (const [key, label, color, tip] of CATEGORIES) {
    tb.append(
      h(
        "tr",
        { title: tip },
        h("td", {}, h("span", { class: "swatch", style: `background:${color}` }), label),
        h("td", { class: "num", text: ms(avg[key]) }),
        h("td", { class: "num", text: pct(share(avg[key], avg.total_ns)) }),
      ),
    );
  }
  tb.append(h("tr", { class: "total" }, h("td", { text: "Step" }), h("td", { class: "num", text: ms(avg.total_ns) }), h("td", { class: "num", text: "100.0" })));
  avgTable.append(tb);

  // -- devices and environment -------------------------------------------------------------
  const info = ov.info;
  const devTable = h("table", { id: "ov-devices", class: "data-table" });
  devTable.append(
    h("thead", {}, h("tr", {}, ...["Device", "Name", "Memory", "Compute capability", "Properties"].map((t) => h("th", { text: t })))),
  );
  const db = h("tbody");
  for (const d of info.devices) {
    db.append(
      h(
        "tr",
        {},
        h("td", { text: `${d.kind}:${d.index}` }),
        h("td", { text: d.name }),
        h("td", { text: bytes(d.memory_bytes) }),
        h("td", { text: d.compute_capability || "–" }),
        h("td", { class: "text", text: Object.entries(d.properties).map(([k, v]) => `${k}=${v}`).join(", ") || "–" }),
      ),
    );
  }
  if (!info.devices.length) db.append(h("tr", { class: "no-rows" }, h("td", { colspan: 5, text: "No device recorded (CPU-only profile)." })));
  devTable.append(db);
  const envRows: [string, string][] = [
    ["Format", info.format],
    ["Worker", info.worker || "–"],
    ["Rank", info.rank >= 0 ? String(info.rank) : "–"],
    ["World size", info.world_size > 0 ? String(info.world_size) : "–"],
    ["Host", info.host || "–"],
    ["PID", info.pid > 0 ? String(info.pid) : "–"],
    ["Window length (ms)", ms(info.duration_ns)],
    ...Object.entries(info.environment)
      .filter(([, v]) => v !== "")
      .sort(([a], [b]) => a.localeCompare(b)),
  ];
  const env = kvTable("ov-env", envRows, ["Setting", "Value"]);

  const runSection = host.run && host.run.workers.length > 1 ? runOverview(host) : null;
  host.el.append(
    ...(runSection ? [runSection] : []),
    ...[problemsList(ov.problems, "ov-problems")].filter((x): x is HTMLElement => !!x),
    h("div", { class: "grid2" }, card("Performance summary", perf), card("Suggestions", suggestions)),
    card(`Step time breakdown (ms), ${ov.steps.length} step${ov.steps.length === 1 ? "" : "s"}`, stepChartEl),
    h("div", { class: "grid2" }, card("Average step breakdown", avgTable), card("Average step breakdown (share)", avgChartEl)),
    h("div", { class: "grid2" }, card("Devices", devTable), card("Environment and profiler settings", h("div", { class: "table-wrap short" }, env))),
  );

  const stepChart = new RawChart(stepChartEl);
  charts.push(stepChart);
  const labels = ov.steps.map((s) => (s.number > 0 ? `#${s.number}` : "window"));
  stepChart.set({
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      confine: true,
      formatter: (ps: { dataIndex: number }[]) => {
        const s = ov.steps[ps[0]?.dataIndex ?? 0];
        return tipLines(`Step ${labels[ps[0]?.dataIndex ?? 0]}: ${ms(s.dur_ns)} ms`, CATEGORIES.filter(([k]) => s.breakdown[k] > 0).map(([k, l]) => `${l}: ${ms(s.breakdown[k])} ms (${pct(share(s.breakdown[k], s.breakdown.total_ns))}%)`));
      },
    },
    legend: { top: 0, type: "scroll" },
    grid: { left: 8, right: 16, top: 32, bottom: 24, containLabel: true },
    xAxis: { type: "category", data: labels, name: "Step", nameLocation: "middle", nameGap: 26 },
    yAxis: { type: "value", name: "ms" },
    series: CATEGORIES.map(([k, l, color]) => ({
      type: "bar",
      name: l,
      stack: "step",
      itemStyle: { color },
      barMaxWidth: 48,
      data: ov.steps.map((s) => s.breakdown[k] / 1e6),
    })),
  });
  const avgChart = new RawChart(avgChartEl);
  charts.push(avgChart);
  avgChart.set({
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: (p: { name: string; value: number; percent: number }) => tipLines(p.name, [`${p.value.toFixed(3)} ms (${p.percent.toFixed(1)}%)`]),
    },
    series: [
      {
        type: "pie",
        radius: ["35%", "70%"],
        data: CATEGORIES.filter(([k]) => avg[k] > 0).map(([k, l, color]) => ({ name: l, value: avg[k] / 1e6, itemStyle: { color } })),
        label: { formatter: "{b}: {d}%" },
      },
    ],
  });
  host.setState("loaded");
}

// -- the whole run: one row per rank, from /cluster --------------------------------------------------
interface RankFigures {
  rank: number;
  worker: string;
  window: string;
  steps: number;
  step_ns: number;
  compute_share: number;
  comm_not_hidden_share: number;
  memory_device: string;
  memory_peak_bytes: number;
  memory_capacity_bytes: number;
  slowest_op: string;
  slowest_op_ns: number;
  slowest_op_metric: string;
}
interface Range {
  min: number;
  min_rank: number;
  max: number;
  max_rank: number;
}
interface ClusterOverview {
  window_index: number;
  per_rank: RankFigures[];
  problems: { worker: string; window: string; message: string }[];
  slow_ranks: { metric: string; flagged: boolean; slowest_rank: number; ratio: number }[];
  run_summary: {
    ranks: number;
    step_ns: Range | null;
    compute_share: Range | null;
    comm_not_hidden_share: Range | null;
    memory_peak_bytes: Range | null;
    slowest_op: { name: string; ns: number; rank: number; metric: string } | null;
  };
}

const RUN_HEAD: [string, string, boolean][] = [
  ["Rank", "The rank (worker) of the run", true],
  ["Worker", "The worker's profile", false],
  ["Step time avg (ms)", "Mean step time of the rank's window", true],
  ["Compute share (%)", "Device compute, overlapped communication included, of the average step", true],
  ["Communication not hidden (%)", "Communication not overlapped by compute, of the average step", true],
  ["Memory peak", "Peak allocated memory of the rank's device", true],
  ["Slowest operator", "The operator with the most self time (device when recorded, else host)", false],
];

function opText(name: string, ns: number, metric: string): string {
  return name ? `${name} (${ms(ns)} ms ${metric.startsWith("device") ? "device" : "host"} self)` : "–";
}

function rangeText(r: Range | null, fmt: (x: number) => string): string {
  if (!r) return "–";
  return r.min === r.max ? fmt(r.max) : `${fmt(r.min)} – ${fmt(r.max)}`;
}

function runTable(cl: ClusterOverview): HTMLElement {
  const flagged = new Map<number, string[]>();
  for (const s of cl.slow_ranks) if (s.flagged) flagged.set(s.slowest_rank, [...(flagged.get(s.slowest_rank) ?? []), s.metric]);
  const t = h("table", { id: "ov-run", class: "data-table run-overview" });
  t.append(h("thead", {}, h("tr", {}, ...RUN_HEAD.map(([l, tip, num]) => h("th", { class: num ? "num" : "", title: tip, text: l })))));
  const b = h("tbody");
  for (const r of cl.per_rank) {
    const slow = flagged.get(r.rank);
    b.append(
      h(
        "tr",
        { class: slow ? "slow" : "", "data-rank": r.rank, title: slow ? `Slow rank: ${slow.join(", ")}` : undefined },
        h("td", { class: "num rank", text: String(r.rank) }),
        h("td", { class: "text", text: r.worker, title: r.worker }),
        h("td", { class: "num", text: ms(r.step_ns) }),
        h("td", { class: "num", text: pct(r.compute_share) }),
        h("td", { class: "num", text: pct(r.comm_not_hidden_share) }),
        h("td", { class: "num", text: r.memory_peak_bytes >= 0 ? `${bytes(r.memory_peak_bytes)} (${r.memory_device})` : "–" }),
        h("td", { class: "text", text: opText(r.slowest_op, r.slowest_op_ns, r.slowest_op_metric), title: r.slowest_op }),
      ),
    );
  }
  const s = cl.run_summary;
  const mem = s.memory_peak_bytes;
  b.append(
    h(
      "tr",
      { class: "whole-run", title: "The whole run: lowest – highest over the ranks" },
      h("td", { class: "rank", text: `All ${s.ranks} ranks` }),
      h("td", { class: "text", text: "lowest – highest" }),
      h("td", { class: "num", text: rangeText(s.step_ns, ms) }),
      h("td", { class: "num", text: rangeText(s.compute_share, pct) }),
      h("td", { class: "num", text: rangeText(s.comm_not_hidden_share, pct) }),
      h("td", { class: "num", text: mem ? `max ${bytes(mem.max)} (rank ${mem.max_rank})` : "–" }),
      h("td", { class: "text", text: s.slowest_op ? `${opText(s.slowest_op.name, s.slowest_op.ns, s.slowest_op.metric)}, rank ${s.slowest_op.rank}` : "–" }),
    ),
  );
  t.append(b);
  return t;
}

/** The "Run overview" card: progress while /cluster digests the ranks, then the table. */
function runOverview(host: ViewHost): HTMLElement {
  const title = h("h3", { class: "section-title", text: "Run overview (all ranks)" });
  const progress = rankProgress("ov-run-progress");
  progress.update(0, host.run?.workers.length ?? 0);
  const el = h("section", { class: "card", id: "ov-run-card", "data-state": "loading" }, title, progress.el);
  pollCluster<ClusterOverview>(windowParams(host.sel), host.signal, progress.update).then(
    (cl) => {
      if (host.signal.aborted) return;
      title.textContent = `Run overview (all ranks, window ${cl.window_index + 1})`;
      title.title = `The ${cl.window_index + 1}. window of every rank of the run`;
      const slow = cl.slow_ranks.filter((x) => x.flagged);
      const parts: HTMLElement[] = [h("div", { class: "table-wrap short" }, runTable(cl))];
      if (slow.length)
        parts.push(
          h("p", { class: "muted", id: "ov-run-slow", text: `Slow ranks (spread over 5% of the mean): ${slow.map((x) => `${x.metric}: rank ${x.slowest_rank} (${pct(x.ratio)}%)`).join("; ")}. See the Communication view.` }),
        );
      if (cl.problems.length)
        parts.push(h("ul", { class: "problems" }, ...cl.problems.map((p) => h("li", { class: "error", text: `${p.worker} / ${p.window}: ${p.message}` }))));
      el.replaceChildren(title, ...parts);
      el.dataset.state = "loaded";
    },
    (e) => {
      if (host.signal.aborted || (e as Error).name === "AbortError") return;
      el.replaceChildren(title, h("div", { class: "notice error", role: "alert", text: `Cannot compare the ranks: ${errorText(e)}` }));
      el.dataset.state = "error";
    },
  );
  return el;
}

export const overviewView: ViewDef = {
  id: "overview",
  title: "Overview",
  mount(host) {
    void load(host);
  },
};
