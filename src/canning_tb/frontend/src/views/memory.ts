// Memory: per device, allocated / reserved (/ active) memory over time with the peak marked and the
// capacity, a zoomable time range that the allocation events and per-operator tables follow,
// the Ascend component table, and the empty_cache warning.
import { windowParams } from "../api";
import { RawChart, tipLines } from "../chart";
import { h, option } from "../dom";
import { bytes, int, mb, ms } from "../format";
import { card, fetchOr, kvTable, problemsList, SortTable, type Col, type Problem } from "./common";
import { showEmpty, showLoading, type ViewDef, type ViewHost } from "./view";

interface MemEvent {
  op: string;
  bytes: number;
  alloc_ns: number;
  free_ns: number;
}
interface OpMem {
  name: string;
  allocations: number;
  allocated_bytes: number;
  self_allocations: number;
  self_allocated_bytes: number;
  increase_bytes: number;
  self_increase_bytes: number;
}
interface DeviceMemory {
  device: string;
  curve_ts_ns: number[];
  curve_allocated_bytes: number[];
  curve_reserved_bytes: number[];
  curve_active_bytes: number[];
  peak_allocated_bytes: number;
  peak_ts_ns: number;
  peak_reserved_bytes: number;
  capacity_bytes: number;
  allocations: number;
  frees: number;
  allocated_bytes: number;
  events: MemEvent[];
  events_truncated: boolean;
  ops: OpMem[];
  components: { component: string; peak_reserved_bytes: number; peak_allocated_bytes: number }[];
  empty_cache_calls: number;
}
interface MemoryResponse {
  problems: Problem[];
  devices: DeviceMemory[];
  info: { duration_ns: number };
}

const MB = 1048576;
const prefs = { device: "" };

const EVENT_COLS: Col<MemEvent>[] = [
  { key: "op", label: "Operator", value: (e) => e.op, cls: "name", tip: "Operator that allocated" },
  { key: "bytes", label: "Size (MB)", num: true, value: (e) => e.bytes / MB, fmt: (e) => mb(e.bytes) },
  { key: "alloc", label: "Allocated at (ms)", num: true, value: (e) => e.alloc_ns, fmt: (e) => (e.alloc_ns < 0 ? "before the window" : ms(e.alloc_ns)) },
  { key: "free", label: "Freed at (ms)", num: true, value: (e) => (e.free_ns < 0 ? Infinity : e.free_ns), fmt: (e) => (e.free_ns < 0 ? "not freed" : ms(e.free_ns)) },
  {
    key: "life",
    label: "Lifetime (ms)",
    num: true,
    value: (e) => (e.alloc_ns >= 0 && e.free_ns >= 0 ? e.free_ns - e.alloc_ns : -1),
    fmt: (e) => (e.alloc_ns >= 0 && e.free_ns >= 0 ? ms(e.free_ns - e.alloc_ns) : "–"),
  },
];

interface RangeOp {
  name: string;
  allocations: number;
  bytes: number;
  max: number;
  freed: number;
}
const RANGE_OP_COLS: Col<RangeOp>[] = [
  { key: "name", label: "Operator", value: (r) => r.name, cls: "name" },
  { key: "allocations", label: "Allocations", num: true, value: (r) => r.allocations, fmt: (r) => int(r.allocations) },
  { key: "bytes", label: "Allocated (MB)", num: true, value: (r) => r.bytes / MB, fmt: (r) => mb(r.bytes) },
  { key: "mean", label: "Mean size (MB)", num: true, value: (r) => r.bytes / r.allocations / MB, fmt: (r) => mb(r.bytes / r.allocations) },
  { key: "max", label: "Largest (MB)", num: true, value: (r) => r.max / MB, fmt: (r) => mb(r.max) },
  { key: "freed", label: "Freed in range", num: true, value: (r) => r.freed, fmt: (r) => int(r.freed) },
];
const WINDOW_OP_COLS: Col<OpMem>[] = [
  { key: "name", label: "Operator", value: (r) => r.name, cls: "name" },
  { key: "allocations", label: "Allocations", num: true, value: (r) => r.allocations, fmt: (r) => int(r.allocations) },
  { key: "allocated_bytes", label: "Allocated (MB)", num: true, value: (r) => r.allocated_bytes / MB, fmt: (r) => mb(r.allocated_bytes) },
  { key: "self_allocations", label: "Self Allocations", num: true, value: (r) => r.self_allocations, fmt: (r) => int(r.self_allocations) },
  { key: "self_allocated_bytes", label: "Self Allocated (MB)", num: true, value: (r) => r.self_allocated_bytes / MB, fmt: (r) => mb(r.self_allocated_bytes) },
  { key: "increase_bytes", label: "Increase (MB)", num: true, value: (r) => r.increase_bytes / MB, fmt: (r) => (r.increase_bytes / MB).toFixed(1) },
];

function show(host: ViewHost, data: MemoryResponse, dev: DeviceMemory, charts: RawChart[]): void {
  const devSel = h("select", { id: "mem-device", "aria-label": "Device" });
  for (const d of data.devices) devSel.append(option(d.device, d.device, d.device === dev.device));
  devSel.onchange = () => {
    prefs.device = devSel.value;
    charts.splice(0).forEach((c) => c.dispose());
    show(host, data, data.devices.find((d) => d.device === devSel.value) ?? data.devices[0], charts);
  };
  const cap = dev.capacity_bytes;
  const capBox = h("input", { id: "mem-capacity", type: "checkbox" });
  capBox.checked = cap > 0 && dev.peak_reserved_bytes > cap / 4;
  const summary = kvTable("mem-summary", [
    ["Peak allocated (MB)", mb(dev.peak_allocated_bytes), `at ${ms(dev.peak_ts_ns)} ms`],
    ["Peak reserved (MB)", mb(dev.peak_reserved_bytes)],
    ["Capacity (MB)", cap > 0 ? mb(cap) : "unknown"],
    ["Peak allocated of capacity (%)", cap > 0 ? ((100 * dev.peak_allocated_bytes) / cap).toFixed(1) : "–"],
    ["Allocations", int(dev.allocations)],
    ["Frees", int(dev.frees)],
    ["Allocated in total", bytes(dev.allocated_bytes)],
  ]);

  const warn =
    dev.empty_cache_calls > 0
      ? h("div", { id: "mem-empty-cache", class: "notice warn", role: "note" },
          h("strong", { text: `torch.cuda.empty_cache() / torch.npu.empty_cache() was called ${int(dev.empty_cache_calls)} time${dev.empty_cache_calls === 1 ? "" : "s"}. ` }),
          "Releasing the cached blocks makes the allocator ask the driver again, which is slow and fragments memory; call it only when memory must go back to other processes.")
      : null;

  const chartEl = h("div", { id: "mem-chart", class: "chart tall", "data-points": dev.curve_ts_ns.length });
  const rangeText = h("span", { id: "mem-range", class: "muted" });
  const resetBtn = h("button", { id: "mem-reset", type: "button", class: "button", title: "Clear the selected time range and the zoom" }, "Reset");
  resetBtn.disabled = true;
  const evTable = new SortTable<MemEvent>("mem-events", EVENT_COLS, "bytes", true);
  const opTable = new SortTable<RangeOp>("mem-ops", RANGE_OP_COLS, "bytes", true);
  const winOps = new SortTable<OpMem>("mem-window-ops", WINDOW_OP_COLS, "allocated_bytes", true, "No operator allocated memory.");
  winOps.setRows(dev.ops);
  const evCount = h("span", { id: "mem-event-count", class: "muted" });

  const applyRange = (lo: number, hi: number, full: boolean) => {
    rangeText.textContent = full
      ? "Whole window: drag across the chart to select a time range (or zoom with the mouse wheel / the slider)."
      : `Range ${ms(lo)} – ${ms(hi)} ms`;
    resetBtn.disabled = full;
    if (!dev.events.length) {
      const why = "No allocation events for this device in the digest (they need profile_memory=True and allocation records with addresses).";
      evTable.setRows([], why);
      opTable.setRows([], why);
      evCount.textContent = "";
      return;
    }
    const inRange = (t: number) => t >= 0 && t >= lo && t <= hi;
    const evs = full ? dev.events : dev.events.filter((e) => inRange(e.alloc_ns));
    evTable.setRows(evs, "No allocation in this range.");
    const agg = new Map<string, RangeOp>();
    for (const e of evs) {
      if (!full && !inRange(e.alloc_ns)) continue;
      const r = agg.get(e.op) ?? { name: e.op, allocations: 0, bytes: 0, max: 0, freed: 0 };
      r.allocations++;
      r.bytes += e.bytes;
      r.max = Math.max(r.max, e.bytes);
      if (e.free_ns >= 0 && (full || inRange(e.free_ns))) r.freed++;
      agg.set(e.op, r);
    }
    opTable.setRows([...agg.values()], "No allocation in this range.");
    evCount.textContent = `${int(evs.length)} of ${int(dev.events.length)} events${dev.events_truncated ? " (the digest keeps the largest only)" : ""}`;
  };

  const components = dev.components.length
    ? (() => {
        const t = new SortTable<DeviceMemory["components"][number]>(
          "mem-components",
          [
            { key: "component", label: "Component", value: (c) => c.component },
            { key: "res", label: "Peak reserved (MB)", num: true, value: (c) => c.peak_reserved_bytes / MB, fmt: (c) => mb(c.peak_reserved_bytes) },
            { key: "alloc", label: "Peak allocated (MB)", num: true, value: (c) => c.peak_allocated_bytes / MB, fmt: (c) => mb(c.peak_allocated_bytes) },
          ],
          "res",
        );
        t.setRows(dev.components);
        return card("NPU memory by component", h("div", { class: "table-wrap short" }, t.el));
      })()
    : null;

  host.el.replaceChildren(
    ...[problemsList(data.problems, "mem-problems")].filter((x): x is HTMLElement => !!x),
    h("div", { class: "toolbar" }, h("label", {}, "Device ", devSel), cap > 0 ? h("label", {}, capBox, "Show the device capacity") : "", h("span", { class: "mem-range-bar" }, rangeText, resetBtn)),
    ...(warn ? [warn] : []),
    h("div", { class: "grid-mem" }, card("Memory over time (MB)", chartEl), card("Summary", summary)),
    h("section", { class: "card" }, h("div", { class: "table-head" }, h("h3", { class: "section-title", text: "Allocations in the range" }), evCount), h("div", { class: "table-wrap short" }, evTable.el)),
    h("div", { class: "grid2" },
      card("Operators allocating in the range", h("div", { class: "table-wrap short" }, opTable.el)),
      card("Operators over the whole window", h("div", { class: "table-wrap short" }, winOps.el))),
    ...(components ? [components] : []),
  );

  const chart = new RawChart(chartEl);
  charts.push(chart);
  const t = dev.curve_ts_ns.map((x) => x / 1e6);
  const pair = (ys: number[]) => ys.map((y, i) => [t[i], y / MB]);
  const draw = () => {
    const series: unknown[] = [
      {
        type: "line",
        name: "Allocated",
        step: "end",
        showSymbol: false,
        data: pair(dev.curve_allocated_bytes),
        markPoint: {
          symbol: "pin",
          symbolSize: 44,
          data: [{ name: "Peak", coord: [dev.peak_ts_ns / 1e6, dev.peak_allocated_bytes / MB], value: (dev.peak_allocated_bytes / MB).toFixed(0) }],
        },
        markLine: capBox.checked && cap > 0
          ? { symbol: "none", lineStyle: { color: "#c62828", type: "dashed" }, label: { formatter: `Capacity ${mb(cap)} MB` }, data: [{ yAxis: cap / MB }] }
          : undefined,
      },
      { type: "line", name: "Reserved", step: "end", showSymbol: false, data: pair(dev.curve_reserved_bytes) },
    ];
    if (dev.curve_active_bytes.length === t.length && t.length) series.push({ type: "line", name: "Active", step: "end", showSymbol: false, data: pair(dev.curve_active_bytes) });
    chart.set({
      tooltip: {
        trigger: "axis",
        confine: true,
        formatter: (ps: { seriesName: string; value: [number, number] }[]) =>
          tipLines(`${(ps[0]?.value[0] ?? 0).toFixed(3)} ms`, ps.map((p) => `${p.seriesName}: ${p.value[1].toFixed(1)} MB`)),
      },
      legend: { top: 0 },
      grid: { left: 8, right: 24, top: 32, bottom: 64, containLabel: true },
      xAxis: { type: "value", name: "Time (ms)", nameLocation: "middle", nameGap: 24, min: "dataMin", max: "dataMax" },
      yAxis: { type: "value", name: "MB" },
      dataZoom: [
        { type: "inside", xAxisIndex: 0, filterMode: "none" },
        { type: "slider", xAxisIndex: 0, filterMode: "none", bottom: 8, height: 20 },
      ],
      // drag on the chart selects a time range (the tables follow it)
      brush: {
        xAxisIndex: 0,
        brushType: "lineX",
        brushMode: "single",
        transformable: false,
        throttleType: "debounce",
        throttleDelay: 100,
        brushStyle: { color: "rgba(245,124,0,0.15)", borderColor: "rgba(245,124,0,0.8)", borderWidth: 1 },
        outOfBrush: { colorAlpha: 0.35 },
      },
      series,
    });
    chart.chart.dispatchAction({ type: "takeGlobalCursor", key: "brush", brushOption: { brushType: "lineX", brushMode: "single" } });
    if (brushed)
      chart.chart.dispatchAction({ type: "brush", areas: [{ brushType: "lineX", xAxisIndex: 0, coordRange: [brushed[0] / 1e6, brushed[1] / 1e6] }] });
  };
  // the selected range in ns, snapped outwards to whole µs so the label (ms, 3 decimals) is exact
  let brushed: [number, number] | null = null;
  let zoomed: [number, number] | null = null;
  const current = () => {
    const r = brushed ?? zoomed;
    chartEl.dataset.range = r ? `${Math.round(r[0])}-${Math.round(r[1])}` : "";
    if (r) applyRange(r[0], r[1], false);
    else applyRange(0, Infinity, true);
  };
  draw();
  capBox.onchange = draw;
  chart.chart.on("brushEnd", (p: unknown) => {
    const areas = (p as { areas?: { coordRange?: number[] }[] }).areas ?? [];
    const cr = areas[0]?.coordRange;
    if (!cr || cr.length < 2) {
      brushed = null;
    } else {
      const a = Math.min(cr[0], cr[1]);
      const b = Math.max(cr[0], cr[1]);
      brushed = [Math.max(0, Math.floor(a * 1000)) * 1000, Math.ceil(b * 1000) * 1000];
    }
    current();
  });
  resetBtn.onclick = () => {
    brushed = null;
    zoomed = null;
    chart.chart.dispatchAction({ type: "brush", areas: [] });
    chart.chart.dispatchAction({ type: "dataZoom", start: 0, end: 100 });
    current();
  };
  const onZoom = () => {
    const opt = chart.chart.getOption() as { dataZoom?: { start?: number; end?: number }[] };
    const z = opt.dataZoom?.[0];
    const lo0 = t.length ? t[0] : 0;
    const hi0 = t.length ? t[t.length - 1] : 0;
    const s = z?.start ?? 0;
    const e = z?.end ?? 100;
    const lo = (lo0 + ((hi0 - lo0) * s) / 100) * 1e6;
    const hi = (lo0 + ((hi0 - lo0) * e) / 100) * 1e6;
    zoomed = s <= 0 && e >= 100 ? null : [Math.max(0, Math.floor(lo / 1000)) * 1000, Math.ceil(hi / 1000) * 1000];
    current();
  };
  chart.chart.on("datazoom", onZoom);
  applyRange(0, Infinity, true);
  host.setState("loaded");
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Computing the memory of this window…");
  const data = await fetchOr<MemoryResponse>(host, "memory", windowParams(host.sel));
  if (!data) return;
  if (!data.devices.length) {
    showEmpty(
      host,
      "No memory events in this window",
      "Memory is recorded only when the profiler is asked to: profile with profile_memory=True (torch.profiler.profile(..., profile_memory=True), or torch_npu's profiler with profile_memory=True).",
    );
    return;
  }
  const dev =
    data.devices.find((d) => d.device === prefs.device) ?? data.devices.find((d) => d.device.toUpperCase() !== "CPU") ?? data.devices[0];
  const charts: RawChart[] = [];
  host.signal.addEventListener("abort", () => charts.forEach((c) => c.dispose()));
  show(host, data, dev, charts);
}


export const memoryView: ViewDef = {
  id: "memory",
  title: "Memory",
  mount(host) {
    void load(host);
  },
};
