// Roofline: each operator (by name + input shapes) or kernel with modelled FLOPs and bytes as a point
// at its arithmetic intensity and achieved TFLOP/s (log-log, sized by its time), under the device's
// roofs (its peaks, from /roofline); a click opens the operator in the Operators view or the kernel's
// longest call in the Timeline. Every number is the digest's (analysis/efficiency); the roofs are
// drawn from the peaks the digest gives: min(peak, intensity x HBM bandwidth).
import { chipSelect, peakOrigin } from "./chip_select";
import { windowParams, type DevicePeak, type RooflinePoint, type RooflineResponse } from "../api";
import { RawChart, tipLines } from "../chart";
import { h, option } from "../dom";
import { int, ms, us } from "../format";
import { tip } from "../glossary";
import { card, fetchOr, problemsList, SortTable, type Col } from "./common";
import { openTimelineAt } from "./timeline_link";
import { showEmpty, showLoading, type ViewDef, type ViewHost } from "./view";
import { sharePct, sig, workColumns } from "./work_columns";

type Kind = "operator" | "kernel";
const COLORS: Record<string, string> = { compute: "#1976d2", memory: "#f57c00", latency: "#8e24aa", link: "#2e7d32", "": "#757575" };

function peaksTable(peaks: DevicePeak[]): HTMLTableElement {
  const dtypes = [...new Set(peaks.flatMap((p) => Object.keys(p.tflops)))].sort();
  const head = h("tr", {}, h("th", { text: "Device" }), h("th", { text: "Matched" }), ...dtypes.map((d) => h("th", { class: "num", text: `${d} (TFLOP/s)` })),
    h("th", { class: "num", text: "Vector FP32 (TFLOP/s)" }), h("th", { class: "num", text: "HBM (GB/s)", title: tip("peak_bandwidth") }), h("th", { text: "Source" }));
  const body = h("tbody");
  for (const p of peaks) {
    body.append(h("tr", { "data-device": String(p.device) },
      h("td", { text: `${p.kind} ${p.device}: ${p.name}` }), h("td", { text: p.matched || "–" }),
      ...dtypes.map((d) => h("td", { class: "num", text: sig(p.tflops[d] ?? -1) })),
      h("td", { class: "num", text: sig(p.vector_tflops ?? -1) }), h("td", { class: "num", text: sig(p.hbm_gbps ?? -1) }),
      h("td", { class: "text", text: p.source || "–", title: p.source })));
  }
  return h("table", { id: "roofline-peaks", class: "data-table" }, h("thead", {}, head), body);
}

function figures(data: RooflineResponse): HTMLTableElement {
  const r = data.roofline;
  const rows: [string, string, string][] = [
    ["MFU (%)", sharePct(r.mfu ?? -1), tip("mfu")],
    ["Modelled matrix FLOPs per step (GFLOP)", sig((r.flops_per_step ?? -1) < 0 ? -1 : (r.flops_per_step ?? 0) / 1e9), tip("model_flops")],
    [`HBM bandwidth used (GB/s)${r.hbm_source ? `, ${r.hbm_source.replace("_", " ")}` : ""}`, sig(r.hbm_gbps ?? -1), tip("hbm_bandwidth_used")],
    ["HBM bandwidth used (% of peak)", sharePct(r.hbm_share ?? -1), tip("hbm_bandwidth_used")],
    ["Modelled share of kernel time (%)", sharePct(r.modelled_share ?? -1), tip("modelled_share")],
  ];
  const body = h("tbody", {}, ...rows.map(([label, value, help]) => h("tr", {}, h("th", { scope: "row", text: label, title: help }), h("td", { class: "num", text: value }))));
  return h("table", { id: "roofline-figures", class: "data-table kv" }, body);
}

/** Each step's MFU and HBM bandwidth (the route's steps, as the digest holds them). */
function stepsTable(data: RooflineResponse): HTMLTableElement {
  const head = h("tr", {}, h("th", { text: "Step" }), h("th", { class: "num", text: "Duration (ms)" }),
    h("th", { class: "num", text: "Matrix GFLOP", title: tip("model_flops") }), h("th", { class: "num", text: "MFU (%)", title: tip("mfu") }),
    h("th", { class: "num", text: "HBM (GB/s)", title: tip("hbm_bandwidth_used") }));
  const body = h("tbody", {}, ...data.steps.map((s) => h("tr", {},
    h("td", { text: `#${s.number}` }), h("td", { class: "num", text: ms(s.dur_ns) }),
    h("td", { class: "num", text: sig((s.roofline.flops ?? -1) < 0 ? -1 : (s.roofline.flops ?? 0) / 1e9) }),
    h("td", { class: "num", text: sharePct(s.roofline.mfu ?? -1) }), h("td", { class: "num", text: sig(s.roofline.hbm_gbps ?? -1) }))));
  return h("table", { id: "roofline-steps", class: "data-table" }, h("thead", {}, head), body);
}

/** The roof lines of the dtypes the points use: [intensity, TFLOP/s] pairs over the x range. */
function roofs(peak: DevicePeak | undefined, points: RooflinePoint[], xmin: number, xmax: number) {
  if (!peak) return [];
  const hbm = peak.hbm_gbps ?? -1;
  const wanted = new Map<string, number>();
  for (const p of points) {
    const value = p.work.matrix ? (peak.tflops[p.work.dtype] ?? -1) : (peak.vector_tflops ?? -1);
    if (value > 0) wanted.set(p.work.matrix ? `${p.work.dtype} matrix peak` : "FP32 vector peak", value);
  }
  const greys = ["#37474f", "#78909c", "#b0bec5", "#546e7a"];
  return [...wanted].map(([label, top], i) => {
    const ridge = hbm > 0 ? (top * 1e3) / hbm : xmin;
    const line = hbm > 0 && ridge > xmin ? [[xmin, (xmin * hbm) / 1e3], [ridge, top], [Math.max(xmax, ridge * 4), top]] : [[xmin, top], [xmax, top]];
    return { type: "line", name: `${label} ${sig(top)} TFLOP/s`, data: line, symbol: "none", lineStyle: { width: 1.5, type: "dashed", color: greys[i % greys.length] }, itemStyle: { color: greys[i % greys.length] }, tooltip: { show: false }, silent: true };
  });
}

/** A log axis label: 0.001 .. 1000 as they are, beyond that 1e-7 / 1e6. */
function decade(value: number): string {
  return value >= 1e-3 && value <= 1e3 ? String(value) : value.toExponential(0).replace("e+", "e");
}

function pointTip(p: RooflinePoint): HTMLElement {
  const w = p.work;
  return tipLines(p.name, [
    ...(p.input_shapes ? [`Input shapes ${p.input_shapes}`] : []),
    `${sig(w.tflops ?? -1)} TFLOP/s, ${sig(w.gbps ?? -1)} GB/s, ${sig(w.intensity ?? -1)} FLOP/byte`,
    `${sharePct(w.roof_share ?? -1)} % of its roof (${sig(w.roof_tflops ?? -1)} TFLOP/s), ${w.bound || "bound unknown"}`,
    `${w.model}, ${w.dtype || "dtype unknown"}; ${int(p.calls)} calls, ${us(w.time_ns)} µs`,
  ]);
}

class RooflinePanel {
  private chart: RawChart;
  private chartEl = h("div", { id: "roofline-chart", class: "chart tall" });
  private table = new SortTable<RooflinePoint>("roofline-table", [], "work.time_ns", true, "No point of this kind.", undefined, {
    decorateRow: (p, row) => {
      row.title = p.kind === "kernel" ? "Click: the kernel's longest call in the Timeline" : "Click: the operator in the Operators view";
      row.style.cursor = "pointer";
      row.onclick = () => this.openPoint(p);
      return null;
    },
  });

  constructor(private host: ViewHost, private data: RooflineResponse) {
    this.chart = new RawChart(this.chartEl, "svg");
    host.signal.addEventListener("abort", () => this.chart.dispose());
    this.chart.chart.on("click", (event: unknown) => this.open(event as { seriesIndex?: number; dataIndex?: number }));
  }

  private kind(): Kind {
    const asked = this.host.store.state.options["roofline.kind"];
    const has = (k: Kind) => this.data.roofline.points.some((p) => p.kind === k);
    return asked === "kernel" && has("kernel") ? "kernel" : has("operator") ? "operator" : "kernel";
  }

  private points(): RooflinePoint[] {
    return this.data.roofline.points.filter((p) => p.kind === this.kind());
  }

  private open(event: { seriesIndex?: number; dataIndex?: number }): void {
    if (event.seriesIndex === undefined || event.dataIndex === undefined) return;
    const p = this.series()[event.seriesIndex]?.[event.dataIndex];
    if (p) this.openPoint(p);
  }

  private openPoint(p: RooflinePoint): void {
    const store = this.host.store;
    if (p.kind === "kernel") openTimelineAt(store, p.name);
    else store.update({ view: "operators", operators: { ...store.state.operators, group: "shape", search: p.name } });
  }

  /** The points by bound, one scatter series each (the order of the chart's series). */
  private series(): RooflinePoint[][] {
    const groups = new Map<string, RooflinePoint[]>();
    for (const p of this.points()) groups.set(p.work.bound, [...(groups.get(p.work.bound) ?? []), p]);
    return [...groups.values()];
  }

  draw(): void {
    const series = this.series();
    const all = series.flat();
    const xs = all.map((p) => p.work.intensity ?? 0).filter((x) => x > 0);
    // whole decades at the axis ends (a log axis labels its ends as they are)
    const xmin = 10 ** Math.floor(Math.log10(Math.min(...xs, 1) / 2));
    const xmax = 10 ** Math.ceil(Math.log10(Math.max(...xs, 1) * 2));
    const longest = Math.max(...all.map((p) => p.work.time_ns), 1);
    const peak = this.data.roofline.peaks.find((p) => p.device === this.data.roofline.device);
    this.chartEl.dataset.points = String(all.length);
    this.chart.set({
      tooltip: { trigger: "item", confine: true, formatter: (item: { seriesIndex: number; dataIndex: number }) => pointTip(series[item.seriesIndex][item.dataIndex]) },
      legend: { top: 0, type: "scroll" },
      grid: { left: 64, right: 24, top: 40, bottom: 48 },
      xAxis: { type: "log", name: "Arithmetic intensity (FLOP/byte)", nameLocation: "middle", nameGap: 28, min: xmin, max: xmax, axisLabel: { formatter: decade } },
      // compact decade labels; the lowest left out, as it would sit on the x axis' first one
      yAxis: { type: "log", name: "Achieved TFLOP/s", nameLocation: "middle", nameGap: 48, axisLabel: { showMinLabel: false, formatter: decade } },
      series: [
        ...series.map((group) => ({
          type: "scatter",
          name: group[0].work.bound || "bound unknown",
          itemStyle: { color: COLORS[group[0].work.bound] ?? COLORS[""], opacity: 0.75 },
          symbolSize: (_: unknown, params: { dataIndex: number }) => 6 + 28 * Math.sqrt(group[params.dataIndex].work.time_ns / longest),
          data: group.map((p) => [p.work.intensity, p.work.tflops]),
        })),
        ...roofs(peak, all, xmin, xmax),
      ],
    });
    this.table.setColumns(this.columns());
    this.table.setRows(all);
  }

  private columns(): Col<RooflinePoint>[] {
    const cols: Col<RooflinePoint>[] = [{ key: "name", label: "Name", value: (p) => p.name, cls: "name" }];
    if (this.kind() === "operator") cols.push({ key: "input_shapes", label: "Input Shapes", value: (p) => p.input_shapes });
    cols.push(
      { key: "calls", label: "Calls", num: true, value: (p) => p.calls, fmt: (p) => int(p.calls) },
      { key: "work.time_ns", label: "Time (ms)", num: true, value: (p) => p.work.time_ns, fmt: (p) => ms(p.work.time_ns), tip: "The time the rates are of" },
      { key: "work.dtype", label: "Dtype", value: (p) => p.work.dtype || "–" },
      ...workColumns<RooflinePoint>((p) => p.work),
    );
    return cols;
  }

  mount(): void {
    const data = this.data;
    const kindSel = h("select", { id: "roofline-kind", "aria-label": "Points" });
    for (const [k, label] of [["operator", "Operators (name + input shapes)"], ["kernel", "Kernels"]] as [Kind, string][])
      if (data.roofline.points.some((p) => p.kind === k)) kindSel.append(option(k, label, this.kind() === k));
    kindSel.onchange = () => {
      this.host.store.option("roofline.kind", kindSel.value);
      this.draw();
    };
    const notes = data.roofline.notes.map((note) => h("p", { class: "muted roofline-note", text: note }));
    this.host.el.replaceChildren(
      ...[problemsList(data.problems, "roofline-problems")].filter((el): el is HTMLElement => !!el),
      h("div", { class: "grid2" }, card("Work against the hardware", figures(data), ...notes), card("Per step", stepsTable(data))),
      card("Device peaks", chipSelect(this.host, data, "roofline-chip"),
        h("p", { id: "roofline-judged", class: "muted", text: `Judged against: ${peakOrigin(data.roofline.peaks.find((p) => p.device === data.roofline.device))}` }),
        peaksTable(data.roofline.peaks)),
      card("Roofline (click a point: the operator, or the kernel's longest call in the Timeline)",
        h("div", { class: "toolbar" }, h("label", {}, "Points ", kindSel)), this.chartEl),
      h("section", { class: "card" }, h("h3", { class: "section-title", text: "Points" }), h("div", { class: "table-wrap" }, this.table.el)),
    );
    this.draw();
    this.host.setState("loaded");
  }
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Reading the roofline of this window…");
  const data = await fetchOr<RooflineResponse>(host, "roofline", windowParams(host.sel));
  if (!data) return;
  if (!data.roofline.points.length) {
    showEmpty(
      host,
      "No operator or kernel with modelled FLOPs and bytes in this window",
      "The models need the inputs' shapes and dtypes: profile with record_shapes=True (torch_npu: record_shapes=True; its kernel tables give the kernels' shapes at profiler_level Level1 or Level2).",
      ...data.roofline.notes,
    );
    return;
  }
  new RooflinePanel(host, data).mount();
}

export const rooflineView: ViewDef = { id: "roofline", title: "Roofline", mount: (host) => void load(host) };
