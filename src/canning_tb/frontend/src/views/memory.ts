// Memory: per device, allocated / reserved (/ active) memory over time with the peak marked and the
// capacity, a time range (drag across the chart, or zoom) whose allocation events and per-operator
// figures come from /memory_range, the Ascend component table, and the empty_cache warning.
// The device and the range are app state (state.ts): a reload shows the same range.
import {
  getJSON,
  windowParams,
  type ComponentMemory,
  type DeviceMemory,
  type MemoryEvent,
  type MemoryRangeResponse,
  type MemoryResponse,
  type OpMemoryStat,
  type RangeOp,
} from "../api";
import { peakMark, RawChart, tipLines } from "../chart";
import { h, option } from "../dom";
import { bytes, int, mb, ms } from "../format";
import { card, errorText, fetchOr, kvTable, problemsList, SortTable, type Col } from "./common";
import { timelineAt } from "./timeline_link";
import { tip, UNKNOWN_TIP } from "../glossary";
import { showEmpty, showLoading, type ViewDef, type ViewHost } from "./view";
import { snapshotCount, snapshotSection } from "./memory_snapshot";

const MB = 1048576;
type Range = [number, number];

const EVENT_COLS: Col<MemoryEvent>[] = [
  { key: "op", label: "Operator", value: (ev) => ev.op, cls: "name", tip: "Operator that allocated" },
  { key: "bytes", label: "Size (MB)", num: true, value: (ev) => ev.bytes / MB, fmt: (ev) => mb(ev.bytes) },
  { key: "alloc", label: "Allocated at (ms)", num: true, value: (ev) => ev.alloc_ns, fmt: (ev) => (ev.alloc_ns < 0 ? "before the window" : ms(ev.alloc_ns)) },
  { key: "free", label: "Freed at (ms)", num: true, value: (ev) => (ev.free_ns < 0 ? Infinity : ev.free_ns), fmt: (ev) => (ev.free_ns < 0 ? "not freed" : ms(ev.free_ns)) },
  {
    key: "life",
    label: "Lifetime (ms)",
    num: true,
    value: (ev) => (ev.alloc_ns >= 0 && ev.free_ns >= 0 ? ev.free_ns - ev.alloc_ns : -1),
    fmt: (ev) => (ev.alloc_ns >= 0 && ev.free_ns >= 0 ? ms(ev.free_ns - ev.alloc_ns) : "–"),
  },
];
const RANGE_OP_COLS: Col<RangeOp>[] = [
  { key: "name", label: "Operator", value: (row) => row.name, cls: "name" },
  { key: "allocations", label: "Allocations", num: true, value: (row) => row.allocations, fmt: (row) => int(row.allocations) },
  { key: "bytes", label: "Allocated (MB)", num: true, value: (row) => row.bytes / MB, fmt: (row) => mb(row.bytes) },
  { key: "mean", label: "Mean size (MB)", num: true, value: (row) => row.bytes / row.allocations / MB, fmt: (row) => mb(row.bytes / row.allocations) },
  { key: "max", label: "Largest (MB)", num: true, value: (row) => row.max_bytes / MB, fmt: (row) => mb(row.max_bytes) },
  { key: "freed", label: "Freed in range", num: true, value: (row) => row.freed, fmt: (row) => int(row.freed) },
];
const WINDOW_OP_COLS: Col<OpMemoryStat>[] = [
  { key: "name", label: "Operator", value: (row) => row.name, cls: "name" },
  { key: "allocations", label: "Allocations", num: true, value: (row) => row.allocations, fmt: (row) => int(row.allocations) },
  { key: "allocated_bytes", label: "Allocated (MB)", num: true, value: (row) => row.allocated_bytes / MB, fmt: (row) => mb(row.allocated_bytes) },
  { key: "self_allocations", label: "Self Allocations", num: true, value: (row) => row.self_allocations, fmt: (row) => int(row.self_allocations) },
  { key: "self_allocated_bytes", label: "Self Allocated (MB)", num: true, value: (row) => row.self_allocated_bytes / MB, fmt: (row) => mb(row.self_allocated_bytes) },
  { key: "increase_bytes", label: "Increase (MB)", num: true, value: (row) => row.increase_bytes / MB, fmt: (row) => (row.increase_bytes / MB).toFixed(1) },
];
const COMPONENT_COLS: Col<ComponentMemory>[] = [
  { key: "component", label: "Component", value: (row) => row.component },
  { key: "res", label: "Peak reserved (MB)", num: true, value: (row) => row.peak_reserved_bytes / MB, fmt: (row) => mb(row.peak_reserved_bytes) },
  { key: "alloc", label: "Peak allocated (MB)", num: true, value: (row) => row.peak_allocated_bytes / MB, fmt: (row) => mb(row.peak_allocated_bytes) },
];

const NO_EVENTS = "No allocation events for this device in the digest (they need profile_memory=True and allocation records with addresses).";
const NO_EVENTS_RECORDED =
  "This file records the memory curve of this device but no allocation events with addresses (older PyTorch, or a format without them): there are no allocations to list for a range.";

/** Why a device's allocation tables are empty: memory was not recorded, or only its curve was. */
function noEventsText(dev: DeviceMemory): string {
  return dev.curve_ts_ns.length ? NO_EVENTS_RECORDED : NO_EVENTS;
}

/** ms on the chart -> ns, snapped outwards to whole µs so the label (ms, 3 decimals) is exact. */
function snapRange(loMs: number, hiMs: number): Range {
  return [Math.max(0, Math.floor(Math.min(loMs, hiMs) * 1000)) * 1000, Math.ceil(Math.max(loMs, hiMs) * 1000) * 1000];
}

function summaryTable(dev: DeviceMemory): HTMLTableElement {
  const cap = dev.capacity_bytes;
  return kvTable("mem-summary", [
    ["Peak allocated (MB)", mb(dev.peak_allocated_bytes), `${tip("memory_peak")} At ${ms(dev.peak_ts_ns)} ms.`],
    ["Peak reserved (MB)", mb(dev.peak_reserved_bytes), dev.peak_reserved_bytes < 0 ? `${tip("peak_reserved")} ${UNKNOWN_TIP}` : tip("peak_reserved")],
    ["Capacity (MB)", cap > 0 ? mb(cap) : "–", cap > 0 ? "Device memory from the trace's device properties" : `Device memory: ${UNKNOWN_TIP}`],
    ["Peak allocated of capacity (%)", cap > 0 ? ((100 * dev.peak_allocated_bytes) / cap).toFixed(1) : "–"],
    ["Allocations", int(dev.allocations)],
    ["Frees", int(dev.frees)],
    ["Allocated in total", bytes(dev.allocated_bytes)],
  ]);
}

function emptyCacheWarning(dev: DeviceMemory): HTMLElement | null {
  if (dev.empty_cache_calls <= 0) return null;
  const times = `${int(dev.empty_cache_calls)} time${dev.empty_cache_calls === 1 ? "" : "s"}`;
  return h(
    "div",
    { id: "mem-empty-cache", class: "notice warn", role: "note" },
    h("strong", { text: `torch.cuda.empty_cache() / torch.npu.empty_cache() was called ${times}. ` }),
    "Releasing the cached blocks makes the allocator ask the driver again, which is slow and fragments memory; call it only when memory must go back to other processes.",
  );
}

function componentsCard(dev: DeviceMemory): HTMLElement | null {
  if (!dev.components.length) return null;
  const table = new SortTable<ComponentMemory>("mem-components", COMPONENT_COLS, "res");
  table.setRows(dev.components);
  return card("NPU memory by component", h("div", { class: "table-wrap short" }, table.el));
}

/** The line chart's option: allocated (with the peak and, if asked, the capacity), reserved, active. */
function chartOption(dev: DeviceMemory, showCapacity: boolean): Record<string, unknown> {
  const times = dev.curve_ts_ns.map((ns) => ns / 1e6);
  const pair = (values: number[]) => values.map((value, i) => [times[i], value / MB]);
  const cap = dev.capacity_bytes;
  const capLine = { symbol: "none", lineStyle: { color: "#c62828", type: "dashed" }, label: { formatter: `Capacity ${mb(cap)} MB` }, data: [{ yAxis: cap / MB }] };
  const series: unknown[] = [
    {
      type: "line", name: "Allocated", step: "end", showSymbol: false, data: pair(dev.curve_allocated_bytes),
      markPoint: peakMark(dev.peak_ts_ns / 1e6, dev.peak_allocated_bytes / MB, `${Math.round(dev.peak_allocated_bytes / MB).toLocaleString("en-US")} MB`),
      markLine: showCapacity && cap > 0 ? capLine : undefined,
    },
  ];
  // reserved only where the file records it (analysis leaves the curve empty otherwise): no flat 0 line
  if (dev.curve_reserved_bytes.length === times.length && times.length)
    series.push({ type: "line", name: "Reserved", step: "end", showSymbol: false, data: pair(dev.curve_reserved_bytes) });
  if (dev.curve_active_bytes.length === times.length && times.length)
    series.push({ type: "line", name: "Active", step: "end", showSymbol: false, data: pair(dev.curve_active_bytes) });
  type Point = { seriesName: string; value: [number, number] };
  return {
    tooltip: {
      trigger: "axis",
      confine: true,
      formatter: (points: Point[]) => tipLines(`${(points[0]?.value[0] ?? 0).toFixed(3)} ms`, points.map((p) => `${p.seriesName}: ${p.value[1].toFixed(1)} MB`)),
    },
    legend: { top: 0 },
    grid: { left: 8, right: 24, top: 32, bottom: 64, containLabel: true },
    xAxis: { type: "value", name: "Time (ms)", nameLocation: "middle", nameGap: 24, min: "dataMin", max: "dataMax" },
    yAxis: { type: "value", name: "MB", min: 0 },
    dataZoom: [
      { type: "inside", xAxisIndex: 0, filterMode: "none" },
      { type: "slider", xAxisIndex: 0, filterMode: "none", bottom: 8, height: 20 },
    ],
    // drag on the chart selects a time range (the tables follow it)
    brush: {
      xAxisIndex: 0, brushType: "lineX", brushMode: "single", transformable: false, throttleType: "debounce", throttleDelay: 100,
      brushStyle: { color: "rgba(245,124,0,0.15)", borderColor: "rgba(245,124,0,0.8)", borderWidth: 1 },
      outOfBrush: { colorAlpha: 0.35 },
    },
    series,
  };
}

/** The chart of one device, with its brushed and zoomed ranges; onRange gets brushed ?? zoomed. */
class MemoryChart {
  readonly raw: RawChart;
  private brushed: Range | null = null;
  private zoomed: Range | null = null;

  constructor(
    private el: HTMLElement,
    private dev: DeviceMemory,
    private onRange: (range: Range | null) => void,
  ) {
    this.raw = new RawChart(el);
    this.raw.chart.on("brushEnd", (event: unknown) => this.onBrush(event));
    this.raw.chart.on("datazoom", () => this.onZoom());
  }

  draw(showCapacity: boolean): void {
    const option = chartOption(this.dev, showCapacity);
    this.el.dataset.series = (option.series as { name: string }[]).map((series) => series.name).join(",");
    this.raw.set(option);
    const chart = this.raw.chart;
    chart.dispatchAction({ type: "takeGlobalCursor", key: "brush", brushOption: { brushType: "lineX", brushMode: "single" } });
    if (this.brushed)
      chart.dispatchAction({ type: "brush", areas: [{ brushType: "lineX", xAxisIndex: 0, coordRange: [this.brushed[0] / 1e6, this.brushed[1] / 1e6] }] });
  }

  /** Shows a range restored from the app state as the brushed one. */
  restore(range: Range | null, showCapacity: boolean): void {
    this.brushed = range;
    this.draw(showCapacity);
    this.changed();
  }

  reset(): void {
    this.brushed = null;
    this.zoomed = null;
    this.raw.chart.dispatchAction({ type: "brush", areas: [] });
    this.raw.chart.dispatchAction({ type: "dataZoom", start: 0, end: 100 });
    this.changed();
  }

  private changed(): void {
    const range = this.brushed ?? this.zoomed;
    this.el.dataset.range = range ? `${range[0]}-${range[1]}` : "";
    this.onRange(range);
  }

  private onBrush(event: unknown): void {
    const areas = (event as { areas?: { coordRange?: number[] }[] }).areas ?? [];
    const coords = areas[0]?.coordRange;
    this.brushed = coords && coords.length >= 2 ? snapRange(coords[0], coords[1]) : null;
    this.changed();
  }

  private onZoom(): void {
    const opt = this.raw.chart.getOption() as { dataZoom?: { start?: number; end?: number }[] };
    const zoom = opt.dataZoom?.[0];
    const times = this.dev.curve_ts_ns;
    const first = times.length ? times[0] / 1e6 : 0;
    const last = times.length ? times[times.length - 1] / 1e6 : 0;
    const start = zoom?.start ?? 0;
    const end = zoom?.end ?? 100;
    const at = (percent: number) => first + ((last - first) * percent) / 100;
    this.zoomed = start <= 0 && end >= 100 ? null : snapRange(at(start), at(end));
    this.changed();
  }
}

/** The Memory view of one window and device; the selected range comes from /memory_range. */
class MemoryPanel {
  private charts: RawChart[] = [];
  private rangeText = h("span", { id: "mem-range", class: "muted" });
  private resetBtn = h("button", { id: "mem-reset", type: "button", class: "button", title: "Clear the selected time range and the zoom" }, "Reset");
  private capBox = h("input", { id: "mem-capacity", type: "checkbox" });
  private eventCount = h("span", { id: "mem-event-count", class: "muted" });
  private events = new SortTable<MemoryEvent>("mem-events", EVENT_COLS, "bytes", true);
  private rangeOps = new SortTable<RangeOp>("mem-ops", RANGE_OP_COLS, "bytes", true);
  private windowOps = new SortTable<OpMemoryStat>("mem-window-ops", WINDOW_OP_COLS, "allocated_bytes", true, "No operator allocated memory.");
  private rangeRequest: AbortController | null = null;

  constructor(
    private host: ViewHost,
    private data: MemoryResponse,
  ) {
    host.signal.addEventListener("abort", () => this.dispose());
  }

  private device(): DeviceMemory {
    const devices = this.data.devices;
    const chosen = this.host.store.state.memory.device;
    return devices.find((d) => d.device === chosen) ?? devices.find((d) => d.device.toUpperCase() !== "CPU") ?? devices[0];
  }

  private dispose(): void {
    this.rangeRequest?.abort();
    this.charts.splice(0).forEach((chart) => chart.dispose());
  }

  private toolbar(dev: DeviceMemory): HTMLElement {
    const devSel = h("select", { id: "mem-device", "aria-label": "Device" });
    for (const d of this.data.devices) devSel.append(option(d.device, d.device, d.device === dev.device));
    devSel.onchange = () => {
      this.host.store.memory({ device: devSel.value, range: null });
      this.show();
    };
    this.resetBtn.disabled = true;
    const capacity = dev.capacity_bytes > 0 ? h("label", {}, this.capBox, "Show the device capacity") : "";
    return h("div", { class: "toolbar" }, h("label", {}, "Device ", devSel), capacity, h("span", { class: "mem-range-bar" }, this.rangeText, this.resetBtn));
  }

  show(): void {
    this.dispose();
    const dev = this.device();
    const chartEl = h("div", { id: "mem-chart", class: "chart tall", "data-points": dev.curve_ts_ns.length });
    this.capBox.checked = dev.capacity_bytes > 0 && dev.peak_reserved_bytes > dev.capacity_bytes / 4;
    this.windowOps.setRows(dev.ops);
    const wrap = (el: HTMLElement) => h("div", { class: "table-wrap short" }, el);
    const eventsHead = h("div", { class: "table-head" }, h("h3", { class: "section-title", text: "Allocations in the range" }), this.eventCount);
    this.host.el.replaceChildren(
      ...[problemsList(this.data.problems, "mem-problems")].filter((el): el is HTMLElement => !!el),
      this.toolbar(dev),
      ...[emptyCacheWarning(dev)].filter((el): el is HTMLElement => !!el),
      h("div", { class: "grid-mem" }, card("Memory over time (MB)", chartEl), card("Summary", summaryTable(dev), timelineAt(this.host.store, dev.peak_ts_ns, 2_000_000, "mem-timeline-link", "Show the peak in the Timeline", `memory:${dev.device}`))),
      h("section", { class: "card" }, eventsHead, wrap(this.events.el)),
      // one above the other: side by side, their six columns do not fit half a card at 1,280 px
      card("Operators allocating in the range", wrap(this.rangeOps.el)),
      card("Operators over the whole window", wrap(this.windowOps.el)),
      ...[componentsCard(dev)].filter((el): el is HTMLElement => !!el),
    );
    if (snapshotCount(this.host)) {
      const slot = h("div", { id: "snap-slot" });
      this.host.el.append(slot);
      void snapshotSection(this.host, this.charts).then((el) => slot.replaceChildren(el));
    }
    const chart = new MemoryChart(chartEl, dev, (range) => this.select(dev, range));
    this.charts.push(chart.raw);
    this.capBox.onchange = () => chart.draw(this.capBox.checked);
    this.resetBtn.onclick = () => chart.reset();
    chart.restore(this.host.store.state.memory.range, this.capBox.checked);
    this.host.setState("loaded");
  }

  /** A new range (null: the whole window): into the state, then its events and operators. */
  private select(dev: DeviceMemory, range: Range | null): void {
    this.host.store.memory({ device: dev.device, range });
    this.rangeText.textContent = range
      ? `Range ${ms(range[0])} – ${ms(range[1])} ms`
      : "Whole window: drag across the chart to select a time range (or zoom with the mouse wheel / the slider).";
    this.resetBtn.disabled = !range;
    if (!dev.events.length) {
      this.events.setRows([], noEventsText(dev));
      this.rangeOps.setRows([], noEventsText(dev));
      this.eventCount.textContent = "";
      return;
    }
    void this.fetchRange(dev, range);
  }

  private async fetchRange(dev: DeviceMemory, range: Range | null): Promise<void> {
    this.rangeRequest?.abort();
    const request = new AbortController();
    this.rangeRequest = request;
    const params: Record<string, string> = { ...windowParams(this.host.sel), device: dev.device };
    if (range) Object.assign(params, { start_ns: String(range[0]), end_ns: String(range[1]) });
    this.eventCount.dataset.state = "loading";
    try {
      const answer = await getJSON<MemoryRangeResponse>("memory_range", params, request.signal);
      if (!request.signal.aborted) this.showRange(dev, answer);
    } catch (err) {
      if (request.signal.aborted || (err as Error).name === "AbortError") return;
      this.eventCount.textContent = `Cannot read the range: ${errorText(err)}`;
      this.eventCount.dataset.state = "error";
    }
  }

  private showRange(dev: DeviceMemory, answer: MemoryRangeResponse): void {
    this.events.setRows(answer.events, "No allocation in this range.");
    this.rangeOps.setRows(answer.ops, "No allocation in this range.");
    const capped = answer.events_truncated || dev.events_truncated ? " (the digest keeps the largest only)" : "";
    this.eventCount.textContent = `${int(answer.events.length)} of ${int(answer.events_total)} events${capped}`;
    this.eventCount.dataset.state = "loaded";
  }
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Computing the memory of this window…");
  const data = await fetchOr<MemoryResponse>(host, "memory", windowParams(host.sel));
  if (!data) return;
  if (!data.devices.length && snapshotCount(host)) {
    // a window that is an allocator snapshot alone (or a trace without memory events beside one)
    const charts: RawChart[] = [];
    host.el.replaceChildren(await snapshotSection(host, charts));
    host.signal.addEventListener("abort", () => charts.forEach((chart) => chart.dispose()));
    if (!host.signal.aborted) host.setState("loaded");
    return;
  }
  if (!data.devices.length) {
    showEmpty(
      host,
      "No memory events in this window",
      "Memory is recorded only when the profiler is asked to: profile with profile_memory=True (torch.profiler.profile(..., profile_memory=True), or torch_npu's profiler with profile_memory=True).",
    );
    return;
  }
  new MemoryPanel(host, data).show();
}

export const memoryView: ViewDef = {
  id: "memory",
  title: "Memory",
  mount(host) {
    void load(host);
  },
};
