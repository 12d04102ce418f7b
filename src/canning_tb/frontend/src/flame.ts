// A flame graph of a tree (the Module view), drawn with an ECharts custom series: one rectangle per
// node, its width its value, children stacked under (inside) their parent, siblings side by side.
// The layout only places the values the digest gives; it sums nothing that is shown as a figure.
import * as echarts from "echarts/core";
import { CustomChart } from "echarts/charts";
import { GridComponent, TooltipComponent } from "echarts/components";
import { CanvasRenderer } from "echarts/renderers";
import { tipLines } from "./chart";

echarts.use([CustomChart, GridComponent, TooltipComponent, CanvasRenderer]);

export interface FlameNode {
  label: string;
  parent: number; // index in the list (parents before children), -1 for a root
  value: number; // width
  tip: string[]; // tooltip lines
}

const COLORS = ["#f57c00", "#fb8c00", "#ffa726", "#ef6c00", "#e65100", "#ffb74d"];

/** [x0, x1, depth, index] per node: roots side by side from 0, children from their parent's start. */
export function flameLayout(nodes: FlameNode[]): [number, number, number, number][] {
  const next = new Map<number, number>(); // parent index (-1 for the roots) -> where its next child starts
  const start: number[] = [];
  const depth: number[] = [];
  const out: [number, number, number, number][] = [];
  nodes.forEach((node, i) => {
    const base = node.parent >= 0 ? start[node.parent] : 0;
    const x0 = next.get(node.parent) ?? base;
    start[i] = x0;
    depth[i] = node.parent >= 0 ? depth[node.parent] + 1 : 0;
    next.set(node.parent, x0 + Math.max(node.value, 0));
    if (node.value > 0) out.push([x0, x0 + node.value, depth[i], i]);
  });
  return out;
}

export class FlameChart {
  private chart: echarts.ECharts;
  private observer: ResizeObserver;

  constructor(private el: HTMLElement) {
    this.chart = echarts.init(el, undefined, { renderer: "canvas" });
    this.observer = new ResizeObserver(() => this.chart.resize());
    this.observer.observe(el);
  }

  dispose(): void {
    this.observer.disconnect();
    this.chart.dispose();
  }

  show(nodes: FlameNode[]): void {
    const data = flameLayout(nodes);
    const levels = data.reduce((m, d) => Math.max(m, d[2] + 1), 1);
    const width = data.reduce((m, d) => Math.max(m, d[1]), 0);
    this.el.dataset.items = String(data.length);
    this.chart.setOption(
      {
        animation: false,
        grid: { left: 8, right: 8, top: 8, bottom: 8 },
        xAxis: { type: "value", min: 0, max: width || 1, show: false },
        yAxis: { type: "value", min: 0, max: levels, inverse: true, show: false },
        tooltip: {
          formatter: (p: { value: number[] }) => {
            const node = nodes[p.value[3]];
            return tipLines(node.label, node.tip);
          },
        },
        series: [
          {
            type: "custom",
            encode: { x: [0, 1], y: 2 },
            data,
            // eslint-disable-next-line @typescript-eslint/no-explicit-any
            renderItem: (_params: unknown, api: any) => {
              const from = api.coord([api.value(0), api.value(2)]);
              const to = api.coord([api.value(1), api.value(2) + 1]);
              const rect = { x: from[0], y: from[1], width: Math.max(to[0] - from[0] - 1, 0.5), height: to[1] - from[1] - 1 };
              const label = nodes[api.value(3)].label;
              return {
                type: "rect",
                shape: rect,
                style: { fill: COLORS[api.value(2) % COLORS.length] },
                textConfig: { position: "insideLeft" },
                textContent: rect.width > 40 ? { style: { text: label, fill: "#fff", fontSize: 11, width: rect.width - 6, overflow: "truncate" } } : undefined,
              };
            },
          },
        ],
      },
      true,
    );
  }
}
