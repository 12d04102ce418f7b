// Overview: the performance summary of one window, the step-time breakdown per step and on
// average, the devices and environment, and the suggestions (rule hits) with their numbers.
import {
  getJSON,
  windowParams,
  type Breakdown,
  type CategoryShares,
  type ClusterResponse,
  type OverviewResponse,
  type FigureRange,
  type RankFigures,
  type RunSummary,
  type TrendPoint,
  type TrendsLoading,
  type TrendsResponse,
  type WindowFigures,
  type WindowInfo,
} from "../api";
import { RawChart, tipLines } from "../chart";
import { h } from "../dom";
import { bytes, int, ms, pct } from "../format";
import { tip } from "../glossary";
import { card, delay, errorText, fetchOr, kvTable, legend, openRank, pollCluster, problemsList, rankProgress } from "./common";
import { dataCard } from "./sources";
import { RANKS_AS_ROWS, spreadParts } from "./ranks_spread";
import { efficiencyCard } from "./efficiency";
import { inputPipelineCard } from "./input_pipeline";
import { mfuCard } from "./mfu_card";
import { briefItem, observationsBlock, splitFindings } from "./finding_gain";
import { criticalPathCard, crossRankPathCard } from "./critical_path";
import { showEmpty, showLoading, type ViewDef, type ViewHost } from "./view";

// [field, share (analysis/summary.py category_shares), label, colour, tooltip]: the tooltips are the
// glossary's (analysis/glossary.json)
const CATEGORIES: [keyof Breakdown, keyof CategoryShares, string, string, string][] = [
  ["compute_ns", "compute", "Compute", "#388e3c", tip("compute")],
  ["overlapped_ns", "overlapped", "Overlapped", "#8bc34a", tip("overlapped")],
  ["communication_ns", "communication", "Communication", "#c62828", tip("communication")],
  ["memcpy_ns", "memcpy", "Memcpy", "#1976d2", tip("memcpy")],
  ["memset_ns", "memset", "Memset", "#64b5f6", tip("memset")],
  ["device_wait_ns", "device_wait", "Device wait", "#ad1457", tip("device_wait")],
  ["runtime_ns", "runtime", "Runtime", "#7b1fa2", tip("runtime")],
  ["dataloader_ns", "dataloader", "DataLoader", "#f57c00", tip("dataloader")],
  ["host_ns", "host", "Host", "#fbc02d", tip("host")],
  ["idle_ns", "idle", "Idle", "#9e9e9e", tip("idle")],
];

function shareText(value: number | null): string {
  return value === null ? "–" : pct(value);
}

/** The performance summary: /overview's `figures`, as analysis computed them. */
function perfTable(figures: WindowFigures): HTMLTableElement {
  const rows: [string, string, string?][] = [
    ["Steps", int(figures.steps), "ProfilerStep# ranges in the window"],
    ["Total step time (ms)", ms(figures.total_step_ns), tip("total_step_time")],
    ["Average step time (ms)", ms(figures.average_step_ns), tip("step_time")],
    [figures.compute_source === "host" ? "Compute share, host operators (%)" : "Device compute share (%)", shareText(figures.compute_share), tip("compute_share")],
    ["Communication not hidden (%)", shareText(figures.comm_not_hidden_share), tip("comm_not_hidden_share")],
    ["DataLoader share (%)", shareText(figures.dataloader_share), tip("dataloader_share")],
    ["Device idle (%)", shareText(figures.device_idle_share), figures.device_idle_share === null ? `${tip("device_idle_share")} No device work in this window.` : tip("device_idle_share")],
    ["Idle share (%)", shareText(figures.idle_share), tip("idle_share")],
  ];
  for (const mem of figures.memory) {
    const cap = mem.capacity_bytes;
    rows.push([
      `Memory peak, ${mem.device}`,
      cap > 0 ? `${bytes(mem.peak_bytes)} of ${bytes(cap)} (${pct(mem.peak_bytes / cap)}%)` : `${bytes(mem.peak_bytes)} (capacity unknown)`,
      tip("memory_peak"),
    ]);
  }
  const top = figures.slowest_op;
  if (top) {
    const side = top.metric === "device_self_ns" ? "device" : "host";
    rows.push([
      `Slowest operator (by ${side} self time)`,
      `${top.name}: ${ms(top.ns)} ms, ${pct(top.share)}%`,
      tip("slowest_op"),
    ]);
  }
  return kvTable("ov-perf", rows);
}

/** The findings the rules could judge, in the digest's order (ranked by simulated gain), each with its gain range
 * and the change replayed; the observations (no simulated gain) apart below them. The Suggestions view has each
 * one's evidence and what the profile could not tell. */
function suggestions(host: ViewHost, ov: OverviewResponse): HTMLElement {
  const { findings, observations } = splitFindings(ov.rule_hits.filter((hit) => !hit.needs));
  const more = h("button", { type: "button", class: "button", id: "ov-all-suggestions" }, "Evidence and details");
  more.onclick = () => host.store.update({ view: "suggestions" });
  const seen = observationsBlock(observations, "ov-observations");
  const list = findings.length
    ? h("ol", { id: "ov-suggestions", class: "suggestions" }, ...findings.map((hit) => briefItem(hit)))
    : h("p", { id: "ov-suggestions", class: "muted", text: "No suggestion: no rule found a change worth making in this window." });
  return h("div", {}, list, seen, more);
}

function averageTable(avg: Breakdown, shares: CategoryShares): HTMLTableElement {
  const table = h("table", { id: "ov-avg", class: "data-table" });
  table.append(h("thead", {}, h("tr", {}, h("th", { text: "Category" }), h("th", { class: "num", text: "Time (ms)" }), h("th", { class: "num", text: "Share (%)", title: tip("category_share") }))));
  const body = h("tbody");
  for (const [key, part, label, color, tip] of CATEGORIES) {
    body.append(
      h(
        "tr",
        { title: tip },
        h("td", {}, h("span", { class: "swatch", style: `background:${color}` }), label),
        h("td", { class: "num", text: ms(avg[key]) }),
        h("td", { class: "num", text: shareText(shares[part]) }),
      ),
    );
  }
  body.append(h("tr", { class: "total" }, h("td", { text: "Step" }), h("td", { class: "num", text: ms(avg.total_ns) }), h("td", { class: "num", text: "100.0" })));
  table.append(body);
  return table;
}

function devicesTable(info: WindowInfo): HTMLTableElement {
  const table = h("table", { id: "ov-devices", class: "data-table" });
  table.append(h("thead", {}, h("tr", {}, ...["Device", "Name", "Memory", "Compute capability", "Properties"].map((text) => h("th", { text })))));
  const body = h("tbody");
  for (const dev of info.devices) {
    body.append(
      h(
        "tr",
        {},
        h("td", { text: dev.index >= 0 ? `${dev.kind}:${dev.index}` : `${dev.kind} (index unknown)` }),
        h("td", { text: dev.name }),
        h("td", { text: bytes(dev.memory_bytes) }),
        h("td", { text: dev.compute_capability || "–" }),
        h("td", { class: "text", text: Object.entries(dev.properties).map(([key, value]) => `${key}=${value}`).join(", ") || "–" }),
      ),
    );
  }
  if (!info.devices.length) body.append(h("tr", { class: "no-rows" }, h("td", { colspan: 5, text: "No device recorded (CPU-only profile)." })));
  table.append(body);
  return table;
}

function environmentTable(info: OverviewResponse["info"]): HTMLTableElement {
  const rows: [string, string, string?][] = [
    ["Format", info.format],
    ["Worker", info.worker || "–"],
    ["Rank", info.rank >= 0 ? String(info.rank) : "–"],
    ["World size", info.world_size > 0 ? String(info.world_size) : "–", info.world_size > 0 ? tip("world_size") : `${tip("world_size")} Not recorded in the files.`],
    ["Host", info.host || "–"],
    ["PID", info.pid > 0 ? String(info.pid) : "–"],
    ["Window length (ms)", ms(info.duration_ns)],
    ...Object.entries(info.environment)
      .filter(([, value]) => value !== "")
      .sort(([a], [b]) => a.localeCompare(b)),
  ];
  return kvTable("ov-env", rows, ["Setting", "Value"]);
}

function drawStepChart(el: HTMLElement, ov: OverviewResponse): RawChart {
  const chart = new RawChart(el);
  const labels = ov.steps.map((step) => (step.number > 0 ? `#${step.number}` : "window") + (step.left_out ? ` (${step.left_out})` : ""));
  const tooltip = (index: number) => {
    const step = ov.steps[index];
    const lines = CATEGORIES.filter(([key]) => step.breakdown[key] > 0).map(
      ([key, part, label]) => `${label}: ${ms(step.breakdown[key])} ms (${shareText(step.shares[part])}%)`,
    );
    if (step.note) lines.push(step.note);
    return tipLines(`Step ${labels[index]}: ${ms(step.dur_ns)} ms`, lines);
  };
  chart.set({
    tooltip: { trigger: "axis", axisPointer: { type: "shadow" }, confine: true, formatter: (ps: { dataIndex: number }[]) => tooltip(ps[0]?.dataIndex ?? 0) },
    legend: { top: 0, type: "scroll" },
    grid: { left: 8, right: 16, top: 32, bottom: 24, containLabel: true },
    xAxis: { type: "category", data: labels, name: "Step", nameLocation: "middle", nameGap: 26 },
    yAxis: { type: "value", name: "ms" },
    series: CATEGORIES.map(([key, , label, color]) => ({
      type: "bar",
      name: label,
      stack: "step",
      itemStyle: { color },
      barMaxWidth: 48,
      data: ov.steps.map((step) => step.breakdown[key] / 1e6),
    })),
  });
  return chart;
}

function drawAverageChart(el: HTMLElement, avg: Breakdown, shares: CategoryShares): RawChart {
  const chart = new RawChart(el);
  chart.set({
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: (item: { name: string; value: number; data: { share: number | null } }) => tipLines(item.name, [`${item.value.toFixed(3)} ms (${shareText(item.data.share)}%)`]),
    },
    series: [
      {
        type: "pie",
        radius: ["35%", "70%"],
        // each slice carries its share as analysis computed it (the table's): chart.ts labels it so
        data: CATEGORIES.filter(([key]) => avg[key] > 0).map(([key, part, label, color]) => ({ name: label, value: avg[key] / 1e6, share: shares[part], itemStyle: { color } })),
      },
    ],
  });
  return chart;
}

function showNoSteps(host: ViewHost): void {
  showEmpty(
    host,
    "No step time in this window",
    "The window holds no ProfilerStep# range and no timed activity, so there is no step time to break down.",
    "Call prof.step() once per training step inside the profiler (schedule=torch.profiler.schedule(...)) to get one row per step.",
  );
}

function show(host: ViewHost, ov: OverviewResponse): void {
  const stepChartEl = h("div", { id: "ov-steps-chart", class: "chart", "data-steps": ov.steps.length });
  const avgChartEl = h("div", { id: "ov-avg-chart", class: "chart small" });
  const runSection = host.run && host.run.workers.length > 1 ? runOverview(host) : null;
  const why: Record<string, string> = { "window end": "distorted by the window's end", "queued work": "which waited for work queued before the window" };
  const distorted = ov.steps.filter((step) => step.left_out).map((step) => `#${step.number}, ${why[step.left_out] ?? step.left_out}`);
  const averaged = distorted.length ? `; the average leaves out ${distorted.join(", ")}` : "";
  const clock = ov.step_clock === "device" ? "; measured on the device, which runs behind the host" : "";
  const whole = ov.figures.step_source === "window" ? " (the whole window: no step marks)" : "";
  const stepsTitle = `Step time breakdown (ms), ${ov.steps.length} step${ov.steps.length === 1 ? "" : "s"}${whole}${averaged}${clock}`;
  const stepNote = ov.figures.step_note ? h("div", { id: "ov-step-note", class: "notice", role: "note" }, ov.figures.step_note) : null;
  host.el.replaceChildren(
    ...[runSection, problemsList(ov.problems, "ov-problems")].filter((el): el is HTMLElement => !!el),
    h("div", { class: "grid2" }, card("Performance summary", perfTable(ov.figures)), card("Suggestions", suggestions(host, ov))),
    ...[efficiencyCard(ov)].filter((el): el is HTMLElement => !!el),
    mfuCard(host),
    card(stepsTitle, stepNote, stepChartEl),
    criticalPathCard(host),
    trendsCard(host),
    h("div", { class: "grid2" }, card("Average step breakdown", averageTable(ov.average, ov.figures.average_shares)), card("Average step breakdown (share)", avgChartEl)),
    inputPipelineCard(ov.input_pipeline),
    h("div", { class: "grid2" }, card("Devices", devicesTable(ov.info)), card("Environment and profiler settings", h("div", { class: "table-wrap short" }, environmentTable(ov.info)))),
    ...[dataCard(ov.coverage)].filter((el): el is HTMLElement => !!el),
  );
  const charts = [drawStepChart(stepChartEl, ov), drawAverageChart(avgChartEl, ov.average, ov.figures.average_shares)];
  host.signal.addEventListener("abort", () => charts.forEach((chart) => chart.dispose()));
  host.setState("loaded");
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Computing the overview of this window… (the first open of a big trace takes a while)");
  const ov = await fetchOr<OverviewResponse>(host, "overview", windowParams(host.sel));
  if (!ov || host.signal.aborted) return;
  if (!ov.steps.length || ov.average.total_ns <= 0) showNoSteps(host);
  else show(host, ov);
}

// -- trends: the key figures of every window of this worker, from /trends -----------------------------

/** A trend figure (analysis/trends.py trend_scalars) -> [label, value as shown, tooltip]. */
function trendFigure(name: string): [string, (value: number) => number, string] {
  if (name === "step_time_ms") return ["Average step time (ms)", (v) => v, tip("step_time")];
  if (name === "comm_not_hidden_share") return ["Communication not hidden (%)", (v) => 100 * v, tip("comm_not_hidden_share")];
  if (name === "memory_peak_bytes") return ["Memory peak (MB)", (v) => v / 1048576, tip("memory_peak")];
  if (name === "top_op_ms_per_step") return ["Slowest operator (ms per step)", (v) => v, tip("slowest_op")];
  const category = name.replace("breakdown_share/", "");
  const entry = CATEGORIES.find(([, part]) => part === category);
  return [`${entry ? entry[2] : category} share of the step (%)`, (v) => 100 * v, entry ? entry[4] : ""];
}

async function pollTrends(host: ViewHost): Promise<TrendsResponse> {
  for (;;) {
    const body = await getJSON<TrendsResponse | TrendsLoading>("trends", { run: host.sel.run, worker: host.sel.worker }, host.signal);
    if (!body.loading) return body as TrendsResponse;
    await delay(500, host.signal);
  }
}

function drawTrends(el: HTMLElement, points: TrendPoint[], name: string): RawChart {
  const [label, shown] = trendFigure(name);
  const chart = new RawChart(el);
  const have = points.filter((p) => name in p.values);
  chart.set({
    tooltip: { trigger: "axis", confine: true, formatter: (ps: { dataIndex: number }[]) => {
      const p = have[ps[0]?.dataIndex ?? 0];
      return tipLines(`Step ${p.step} (${p.label})`, [`${label}: ${shown(p.values[name]).toFixed(3)}`, ...(p.old_analysis ? ["Digest made by other analysis code"] : [])]);
    } },
    grid: { left: 8, right: 16, top: 32, bottom: 24, containLabel: true },
    xAxis: { type: "category", data: have.map((p) => `#${p.step}`), name: "Last step of the window", nameLocation: "middle", nameGap: 26 },
    yAxis: { type: "value", name: label, scale: true },
    series: [{ type: "line", name: label, showSymbol: true, symbolSize: 7, data: have.map((p) => shown(p.values[name])) }],
  });
  return chart;
}

/** The worker's windows one after the other: the figure picked (kept in the URL) per window; the
 * Scalars tab gets the same figures only when the user turns trend files on (README). */
function trendsCard(host: ViewHost): HTMLElement {
  const body = h("div", { id: "ov-trends", "data-state": "loading" }, h("p", { class: "muted", text: "Reading every window of this worker…" }));
  const el = card("Trends over this worker's windows", body);
  el.title = tip("trends");
  pollTrends(host).then(
    (trends) => {
      if (host.signal.aborted) return;
      const names = [...new Set(trends.windows.flatMap((p) => Object.keys(p.values)))];
      const problems = trends.problems.map((p) => h("li", { class: "error", text: `${p.window}: ${p.message}` }));
      if (trends.windows.length < 2 || !names.length) {
        body.replaceChildren(h("p", { class: "muted", text: "Trends need two or more readable windows of this worker (one per profiling window of the schedule)." }), ...(problems.length ? [h("ul", { class: "problems" }, ...problems)] : []));
        body.dataset.state = "empty";
        return;
      }
      const kept = host.store.state.options["overview.trend"];
      const select = h("select", { id: "ov-trend-figure", "aria-label": "Figure" }, ...names.map((name) => h("option", { value: name, text: trendFigure(name)[0], title: trendFigure(name)[2] })));
      select.value = kept && names.includes(kept) ? kept : names.includes("step_time_ms") ? "step_time_ms" : names[0];
      const chartEl = h("div", { id: "ov-trends-chart", class: "chart small", "data-windows": trends.windows.length });
      body.replaceChildren(h("label", { class: "inline" }, "Figure ", select), chartEl, ...(problems.length ? [h("ul", { class: "problems" }, ...problems)] : []));
      let chart = drawTrends(chartEl, trends.windows, select.value);
      select.onchange = () => {
        chart.dispose();
        chart = drawTrends(chartEl, trends.windows, select.value);
        host.store.option("overview.trend", select.value);
      };
      host.signal.addEventListener("abort", () => chart.dispose());
      body.dataset.state = "loaded";
    },
    (err) => {
      if (host.signal.aborted || (err as Error).name === "AbortError") return;
      body.replaceChildren(h("div", { class: "notice error", role: "alert", text: `Cannot read the trends: ${errorText(err)}` }));
      body.dataset.state = "error";
    },
  );
  return el;
}

// -- the whole run: one row per rank, from /cluster --------------------------------------------------

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

function rangeText(range: FigureRange | null, fmt: (value: number) => string): string {
  if (!range) return "–";
  return range.min === range.max ? fmt(range.max) : `${fmt(range.min)} – ${fmt(range.max)}`;
}

function rankRow(row: RankFigures, slow: string[] | undefined, open: (worker: string) => void): HTMLTableRowElement {
  const link = h("button", { type: "button", class: "link-button elide", text: row.worker, title: `Open ${row.worker} (rank ${row.rank})` });
  link.onclick = () => open(row.worker);
  return h(
    "tr",
    { class: slow ? "slow" : "", "data-rank": row.rank, title: slow ? slow.join("; ") : undefined },
    h("td", { class: "num rank", text: String(row.rank) }),
    h("td", { class: "text" }, link),
    h("td", { class: "num", text: ms(row.step_ns) }),
    h("td", { class: "num", text: shareText(row.compute_share) }),
    h("td", { class: "num", text: shareText(row.comm_not_hidden_share) }),
    h("td", { class: "num", text: row.memory_peak_bytes >= 0 ? `${bytes(row.memory_peak_bytes)} (${row.memory_device})` : "–" }),
    h("td", { class: "text", text: opText(row.slowest_op, row.slowest_op_ns, row.slowest_op_metric) }), // cut: whole on hover
  );
}

function wholeRunRow(summary: RunSummary): HTMLTableRowElement {
  const mem = summary.memory_peak_bytes;
  const top = summary.slowest_op;
  return h(
    "tr",
    { class: "whole-run", title: "The whole run: lowest – highest over the ranks" },
    h("td", { class: "rank", text: `All ${summary.ranks} ranks` }),
    h("td", { class: "text", text: "lowest – highest" }),
    h("td", { class: "num", text: rangeText(summary.step_ns, ms) }),
    h("td", { class: "num", text: rangeText(summary.compute_share, pct) }),
    h("td", { class: "num", text: rangeText(summary.comm_not_hidden_share, pct) }),
    h("td", { class: "num", text: mem ? `max ${bytes(mem.max)} (rank ${mem.max_rank})` : "–" }),
    h("td", { class: "text", text: top ? `${opText(top.name, top.ns, top.metric)}, rank ${top.rank}` : "–" }),
  );
}

/** The ranks the cross-rank findings name (slow ranks, the slowest pipeline stage), with the findings' titles. */
function namedRanks(cl: ClusterResponse): Map<number, string[]> {
  const named = new Map<number, string[]>();
  for (const hit of cl.findings) {
    if (!hit.rule.startsWith("slow_rank_") && hit.rule !== "stage_imbalance") continue;
    for (const e of hit.evidence) if (e.rank >= 0) named.set(e.rank, [...(named.get(e.rank) ?? []), hit.title]);
  }
  return named;
}

function runTable(cl: ClusterResponse, open: (worker: string) => void): HTMLElement {
  const flagged = namedRanks(cl);
  const table = h("table", { id: "ov-run", class: "data-table run-overview" });
  table.append(h("thead", {}, h("tr", {}, ...RUN_HEAD.map(([label, tip, num]) => h("th", { class: num ? "num" : "", title: tip, text: label })))));
  const body = h("tbody");
  for (const row of cl.per_rank) body.append(rankRow(row, flagged.get(row.rank), open));
  body.append(wholeRunRow(cl.run_summary));
  table.append(body);
  return table;
}

/** Many ranks: the whole-run row, the outliers named and the heat map; every rank's row on request. */
function manyRanks(cl: ClusterResponse, signal: AbortSignal, open: (worker: string) => void): HTMLElement[] {
  const charts: RawChart[] = [];
  signal.addEventListener("abort", () => charts.forEach((chart) => chart.dispose()));
  const whole = h("table", { id: "ov-run-summary", class: "data-table run-overview" });
  whole.append(h("thead", {}, h("tr", {}, ...RUN_HEAD.map(([label, tip, num]) => h("th", { class: num ? "num" : "", title: tip, text: label })))));
  whole.append(h("tbody", {}, wholeRunRow(cl.run_summary)));
  const every = h("details", { id: "ov-run-every" }, h("summary", { text: `Every rank (${cl.per_rank.length} rows)` }), h("div", { class: "table-wrap short" }, runTable(cl, open)));
  return [h("div", { class: "table-wrap" }, whole), ...spreadParts(cl, "ov-run", charts, signal), every];
}

function runParts(host: ViewHost, cl: ClusterResponse): HTMLElement[] {
  const open = (worker: string) => openRank(host, worker, cl.window_index);
  const many = cl.per_rank.length > RANKS_AS_ROWS;
  const parts: HTMLElement[] = many ? manyRanks(cl, host.signal, open) : [h("div", { class: "table-wrap short" }, runTable(cl, open))];
  if (namedRanks(cl).size) parts.push(legend("ov-run-legend", [["error", "Red rank: named by a cross-rank finding below (hover the row for which)"]]));
  // the cross-rank findings, in their order (the Suggestions view has their evidence): a spread that is
  // under the significance floors (docs/rules.md) is no finding, whatever its ratio
  const { findings, observations } = splitFindings(cl.findings);
  if (findings.length) parts.push(h("ol", { class: "suggestions", id: "ov-run-findings" }, ...findings.map((hit) => briefItem(hit, false))));
  const seen = observationsBlock(observations, "ov-run-observations", (hit) => briefItem(hit, false));
  if (seen) parts.push(seen);
  if (cl.problems.length)
    parts.push(h("ul", { class: "problems" }, ...cl.problems.map((problem) => h("li", { class: "error", text: `${problem.worker} / ${problem.window}: ${problem.message}` }))));
  return parts;
}

/** The "Run overview" card: progress while /cluster digests the ranks, then the table. */
function runOverview(host: ViewHost): HTMLElement {
  const title = h("h3", { class: "section-title", text: "Run overview (all ranks)" });
  const progress = rankProgress("ov-run-progress");
  progress.update(0, host.run?.workers.length ?? 0);
  const el = h("section", { class: "card", id: "ov-run-card", "data-state": "loading" }, title, progress.el);
  pollCluster(windowParams(host.sel), host.signal, progress.update).then(
    (cl) => {
      if (host.signal.aborted) return;
      title.textContent = `Run overview (all ranks, window ${cl.window_index + 1})`;
      title.title = `The ${cl.window_index + 1}. window of every rank of the run`;
      el.replaceChildren(title, ...runParts(host, cl));
      el.dataset.state = "loaded";
      el.after(crossRankPathCard(host, cl)); // which rank held each step: a card of its own below the run's
    },
    (err) => {
      if (host.signal.aborted || (err as Error).name === "AbortError") return;
      el.replaceChildren(title, h("div", { class: "notice error", role: "alert", text: `Cannot compare the ranks: ${errorText(err)}` }));
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
