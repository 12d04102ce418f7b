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
import { CanvasRenderer } from "echarts/renderers";
import { h } from "./dom";

echarts.use([BarChart, PieChart, LineChart, HeatmapChart, BoxplotChart, ScatterChart, GridComponent, TooltipComponent, LegendComponent, DataZoomComponent,
  MarkPointComponent, MarkLineComponent, VisualMapComponent, BrushComponent, CanvasRenderer]);

const ACCENT = "#f57c00";
const PALETTE = ["#f57c00", "#1976d2", "#388e3c", "#7b1fa2", "#c2185b", "#0097a7", "#fbc02d", "#5d4037", "#455a64", "#e64a19",
  "#303f9f", "#689f38", "#8e24aa", "#00796b", "#ffa000", "#616161"];

export interface Item {
  label: string;
  value: number;
  text: string; // formatted value for the tooltip
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

export class Chart {
  private chart: echarts.ECharts;
  private observer: ResizeObserver;

  constructor(el: HTMLElement) {
    this.chart = echarts.init(el, undefined, { renderer: "canvas" });
    this.observer = new ResizeObserver(() => this.chart.resize());
    this.observer.observe(el);
  }

  dispose(): void {
    this.observer.disconnect();
    this.chart.dispose();
  }

  show(kind: "bar" | "pie", items: Item[], metric: string): void {
    const labels = items.map((item) => item.label);
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
    if (kind === "bar") {
      this.chart.setOption(
        {
          animation: false,
          color: PALETTE,
          tooltip,
          grid: { left: 8, right: 24, top: 8, bottom: 24, containLabel: true },
          xAxis: { type: "value", name: metric, nameLocation: "middle", nameGap: 22, axisLabel: { color: "#555" } },
          yAxis: {
            type: "category",
            inverse: true,
            data: labels,
            axisLabel: { color: "#333", formatter: (v: string) => short(v) },
          },
          series: [{ type: "bar", data: items.map((item) => item.value), itemStyle: { color: ACCENT }, barMaxWidth: 18 }],
        },
        true,
      );
    } else {
      this.chart.setOption(
        {
          animation: false,
          color: PALETTE,
          tooltip,
          series: [
            {
              type: "pie",
              radius: ["30%", "68%"],
              center: ["50%", "52%"],
              data: items.map((item) => ({ name: item.label, value: Math.max(0, item.value) })),
              label: { formatter: (p: { name: string }) => short(p.name, 28), color: "#333" },
            },
          ],
        },
        true,
      );
    }
  }
}

/** A bare ECharts instance that follows its element's size, for views that build their own option.
 * Tooltip formatters must return DOM (tipLines) so trace strings are never parsed as HTML. */
export class RawChart {
  readonly chart: echarts.ECharts;
  private observer: ResizeObserver;

  constructor(el: HTMLElement) {
    this.chart = echarts.init(el, undefined, { renderer: "canvas" });
    this.observer = new ResizeObserver(() => this.chart.resize());
    this.observer.observe(el);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  set(option: any): void {
    this.chart.setOption({ animation: false, color: PALETTE, ...option }, true);
  }

  dispose(): void {
    this.observer.disconnect();
    this.chart.dispose();
  }
}

/** A tooltip as DOM: a bold first line, then one text line each. */
export function tipLines(title: string, lines: string[]): HTMLElement {
  return h("div", { class: "chart-tip" }, h("div", { class: "chart-tip-name", text: title }), ...lines.map((l) => h("div", { text: l })));
}
