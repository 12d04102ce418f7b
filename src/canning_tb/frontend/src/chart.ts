// ECharts, bundled (tree-shaken): works with the network cut. Tooltips are built as DOM
// elements with textContent, so operator names are never parsed as HTML.
import * as echarts from "echarts/core";
import { BarChart, BoxplotChart, HeatmapChart, LineChart, PieChart, ScatterChart } from "echarts/charts";
import {
  BrushComponent,
  DataZoomComponent,
  GridComponent,
  LegendComponent,
  MarkLineComponent,
  MarkPointComponent,
  TooltipComponent,
  VisualMapComponent,
} from "echarts/components";
import { CanvasRenderer, SVGRenderer } from "echarts/renderers";
import { h } from "./dom";
import { currentTheme } from "./theme";

echarts.use([BarChart, PieChart, LineChart, HeatmapChart, BoxplotChart, ScatterChart, GridComponent, TooltipComponent, LegendComponent, DataZoomComponent,
  MarkPointComponent, MarkLineComponent, VisualMapComponent, BrushComponent, CanvasRenderer, SVGRenderer]);

const ACCENT = "#f57c00";
export const PALETTE = ["#f57c00", "#1976d2", "#388e3c", "#7b1fa2", "#c2185b", "#0097a7", "#fbc02d", "#5d4037", "#455a64", "#e64a19",
  "#303f9f", "#689f38", "#8e24aa", "#00796b", "#ffa000", "#616161"];

/** The charts' colours for text, axes and tooltips in each theme (the series keep theirs). */
function themeColors(text: string, muted: string, line: string, split: string, tipBg: string): object {
  const axis = { axisLine: { lineStyle: { color: line } }, axisTick: { lineStyle: { color: line } }, axisLabel: { color: muted }, splitLine: { lineStyle: { color: split } }, nameTextStyle: { color: muted } };
  return {
    backgroundColor: "transparent",
    textStyle: { color: text },
    legend: { textStyle: { color: text }, pageTextStyle: { color: muted }, pageIconColor: muted },
    categoryAxis: axis,
    valueAxis: axis,
    tooltip: { backgroundColor: tipBg, borderColor: line, textStyle: { color: text } },
    visualMap: { textStyle: { color: muted } },
  };
}
echarts.registerTheme("canning-light", themeColors("#212121", "#616161", "#9e9e9e", "#eeeeee", "#ffffff"));
echarts.registerTheme("canning-dark", themeColors("#e0e0e0", "#bdbdbd", "#757575", "#3a3a3a", "#303030"));

/** Charts draw as SVG (sharp text, labels are DOM elements); a chart of very many marks may ask for canvas. */
export type Renderer = "svg" | "canvas";

function init(el: HTMLElement, renderer: Renderer): echarts.ECharts {
  return echarts.init(el, `canning-${currentTheme()}`, { renderer });
}

// -- what every chart gets: nice axis ends, pies whose labels never overlap --------------------------

/** Slices a pie shows before the rest is folded into one "Other" slice. */
export const PIE_SLICES = 8;

type Opt = Record<string, unknown>;

function asList(value: unknown): Opt[] {
  if (!value) return [];
  return (Array.isArray(value) ? value : [value]) as Opt[];
}

/** A value axis that ends at the data ("dataMin"/"dataMax", a time range) keeps its exact extent,
 * but does not write those unrounded ends as labels (354.14887): only the rounded ticks. */
function roundAxisLabels(axis: Opt): void {
  if (axis.type !== "value") return;
  const label = { ...((axis.axisLabel as Opt | undefined) ?? {}) };
  if (axis.min === "dataMin") label.showMinLabel ??= false;
  if (axis.max === "dataMax") label.showMaxLabel ??= false;
  axis.axisLabel = label;
}

/** Pie labels: each slice's share inside it (never over another label or the legend), none on a
 * slice too thin for it; the legend (added when the option has none) names every slice. A slice
 * that carries its `share` (a figure analysis computed: the Overview's breakdown) shows that one,
 * not ECharts' own rounding of the angles. */
function tamePie(series: Opt): void {
  const given = asList(series.data).length > 0 && asList(series.data).every((item) => "share" in item);
  const ownShare = (item: { data: { share: number | null } }) => (item.data.share === null ? "–" : `${(100 * item.data.share).toFixed(1)}%`);
  series.label = { position: "inside", formatter: given ? ownShare : "{d}%", fontSize: 11 };
  series.percentPrecision = 1; // as the tables write shares
  series.minShowLabelAngle = 24;
  series.labelLayout = { hideOverlap: true };
}

/** Room above the highest value for a series' markers (a peak pin), so they stay inside the grid. */
function makeRoomForMarks(option: Opt): void {
  if (!asList(option.series).some((series) => series.markPoint)) return;
  for (const axis of asList(option.yAxis)) if (axis.type === "value" && axis.max === undefined) axis.boundaryGap ??= [0, "18%"];
}

/** A legend across the top and a y axis named at its top end share a row: the plot moves down so
 * that the axis name sits below the legend. */
function clearAxisNamesOfLegend(option: Opt): void {
  const legend = asList(option.legend)[0];
  const grid = option.grid as Opt | undefined;
  if (!legend || legend.orient === "vertical" || legend.bottom !== undefined || !grid || Array.isArray(grid)) return;
  const named = asList(option.yAxis).some((axis) => axis.name && (axis.nameLocation ?? "end") === "end");
  if (named && typeof grid.top === "number") grid.top = Math.max(grid.top, 52);
}

function polish(option: Opt): Opt {
  clearAxisNamesOfLegend(option);
  for (const axis of [...asList(option.xAxis), ...asList(option.yAxis)]) roundAxisLabels(axis);
  const pies = asList(option.series).filter((series) => series.type === "pie");
  pies.forEach(tamePie);
  if (pies.length && !option.legend) {
    // every slice named in a legend beside the pie (a label may be left out, a legend entry never)
    option.legend = { type: "scroll", orient: "vertical", right: 4, top: "middle", tooltip: { show: true }, formatter: (name: string) => short(name, 30) };
    for (const pie of pies) pie.center ??= ["35%", "50%"];
  }
  makeRoomForMarks(option);
  return option;
}

/** A peak marker: a small pin with its value written whole above it (a value inside the pin was cut
 * to what the pin's head holds: "1,261" read ".26."), drawn inside the plot (never over the axis
 * labels: makeRoomForMarks). */
export function peakMark(x: number, y: number, label: string): Opt {
  return {
    symbol: "pin",
    symbolSize: 22,
    label: { show: true, position: "top", distance: 2, fontSize: 11, formatter: label, color: "inherit", className: "peak-label" },
    data: [{ name: "Peak", coord: [x, y] }],
  };
}

export interface Item {
  label: string;
  value: number;
  text: string; // formatted value for the tooltip
}

/** The largest `slices` items, and one "Other" item that sums the rest (its text lists how many). */
export function topWithOther(items: Item[], slices = PIE_SLICES, fmt: (value: number) => string = (v) => v.toLocaleString("en-US", { maximumFractionDigits: 1 })): Item[] {
  const sorted = items.slice().sort((a, b) => b.value - a.value);
  if (sorted.length <= slices) return sorted;
  const rest = sorted.slice(slices - 1);
  const sum = rest.reduce((total, item) => total + Math.max(0, item.value), 0);
  return [...sorted.slice(0, slices - 1), { label: `Other (${rest.length})`, value: sum, text: `${fmt(sum)}, ${rest.length} more` }];
}

function tooltipElement(title: string, value: string, share?: number): HTMLElement {
  return h(
    "div",
    { class: "chart-tip" },
    h("div", { class: "chart-tip-name", text: title }),
    h("div", { text: share === undefined ? value : `${value} (${share.toFixed(1)}%)` }),
  );
}

function short(text: string, max = 48): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A chart of named items: bars (names on the axis, cut short, whole on hover) or a pie of the
 * largest ones and "Other" (names in the legend). */
export class Chart {
  private chart: echarts.ECharts;
  private observer: ResizeObserver;
  private labels: string[] = [];

  constructor(el: HTMLElement, renderer: Renderer = "svg") {
    this.chart = init(el, renderer);
    this.observer = new ResizeObserver(() => this.chart.resize());
    this.observer.observe(el);
    // hovering a (shortened) name on the axis shows its bar's tooltip, with the whole name
    this.chart.on("mouseover", { componentType: "yAxis" }, (event: unknown) => {
      const dataIndex = this.labels.indexOf(String((event as { value?: unknown }).value));
      if (dataIndex >= 0) this.chart.dispatchAction({ type: "showTip", seriesIndex: 0, dataIndex });
    });
  }

  dispose(): void {
    this.observer.disconnect();
    this.chart.dispose();
  }

  show(kind: "bar" | "pie", all: Item[], metric: string): void {
    const items = kind === "pie" ? topWithOther(all) : all;
    this.labels = items.map((item) => item.label);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const tooltip: any = {
      trigger: "item",
      confine: true,
      // a pie's slice share is ECharts' own `percent` of the slices drawn
      formatter: (point: { dataIndex: number; percent?: number }) => {
        const item = items[point.dataIndex];
        return tooltipElement(item.label, `${metric}: ${item.text}`, kind === "pie" ? point.percent : undefined);
      },
    };
    this.chart.setOption(kind === "bar" ? this.barOption(items, metric, tooltip) : this.pieOption(items, tooltip), true);
  }

  private barOption(items: Item[], metric: string, tooltip: unknown): Opt {
    return polish({
      animation: false,
      color: PALETTE,
      tooltip,
      grid: { left: 8, right: 24, top: 8, bottom: 24, containLabel: true },
      xAxis: { type: "value", name: metric, nameLocation: "middle", nameGap: 22 },
      yAxis: { type: "category", inverse: true, data: this.labels, triggerEvent: true, axisLabel: { formatter: (v: string) => short(v) } },
      series: [{ type: "bar", data: items.map((item) => item.value), itemStyle: { color: ACCENT }, barMaxWidth: 18 }],
    });
  }

  private pieOption(items: Item[], tooltip: unknown): Opt {
    return polish({
      animation: false,
      color: PALETTE,
      tooltip,
      // the names (cut short; whole on hover) in a legend beside the pie; the slices carry their share
      legend: { type: "scroll", orient: "vertical", right: 4, top: "middle", width: "42%", tooltip: { show: true }, formatter: (name: string) => short(name, 30) },
      series: [
        {
          type: "pie",
          radius: ["30%", "62%"],
          center: ["30%", "50%"],
          data: items.map((item) => ({ name: item.label, value: Math.max(0, item.value) })),
        },
      ],
    });
  }
}

/** Data points above which a chart draws on canvas: thousands of SVG elements slow the page. */
const SVG_MAX_POINTS = 4000;

/** SVG for the usual charts; canvas for heat maps (a cell per rank and step) and very many points. */
function rendererFor(option: Opt): Renderer {
  const series = asList(option.series);
  const points = series.reduce((total, one) => total + (Array.isArray(one.data) ? one.data.length : 0), 0);
  return series.some((one) => one.type === "heatmap") || points > SVG_MAX_POINTS ? "canvas" : "svg";
}

/** A bare ECharts instance that follows its element's size, for views that build their own option.
 * Tooltip formatters must return DOM (tipLines) so trace strings are never parsed as HTML. The
 * option is polished (chart.ts: rounded axis labels, pie labels that do not overlap, room for
 * markers). The renderer is chosen by the first option (rendererFor) unless given. */
export class RawChart {
  private instance: echarts.ECharts | null = null;
  private observer: ResizeObserver;

  constructor(
    private el: HTMLElement,
    private renderer?: Renderer,
  ) {
    this.observer = new ResizeObserver(() => this.instance?.resize());
    this.observer.observe(el);
  }

  /** The ECharts instance (for events and actions); made on first use. */
  get chart(): echarts.ECharts {
    this.instance ??= init(this.el, this.renderer ?? "svg");
    return this.instance;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  set(option: any): void {
    this.instance ??= init(this.el, this.renderer ?? rendererFor(option));
    this.instance.setOption(polish({ animation: false, color: PALETTE, ...option }), true);
  }

  dispose(): void {
    this.observer.disconnect();
    this.instance?.dispose();
  }
}

/** A tooltip as DOM: a bold first line, then one text line each. */
export function tipLines(title: string, lines: string[]): HTMLElement {
  return h("div", { class: "chart-tip" }, h("div", { class: "chart-tip-name", text: title }), ...lines.map((l) => h("div", { text: l })));
}
