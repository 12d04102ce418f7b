// The ranks of a big run at a glance (GET /cluster's distributions, rank_heatmap and matrix_bins,
// computed in analysis/cluster_spread.py): a heat map rank x figure coloured by the value over the
// figure's median, a box per figure with its outlying ranks named, the spread table and the named
// outliers. Used by the Overview's run card and the Communication view when a run has more ranks
// than a table shows well (RANKS_AS_ROWS).
import type { ClusterResponse, Distribution, MatrixBins } from "../api";
import { RawChart, tipLines } from "../chart";
import { h } from "../dom";
import { mb, ms } from "../format";

export const RANKS_AS_ROWS = 16;

const LABELS: Record<string, string> = {
  step_ns: "Step",
  computing_ns: "Computing",
  communication_ns: "Communication",
  free_ns: "Free",
  wait_ns: "Wait",
  transfer_ns: "Transfer",
};

function label(metric: string): string {
  return LABELS[metric] ?? metric;
}

function rankList(entries: { rank: number }[]): string {
  return entries.map((entry) => entry.rank).join(", ") || "–";
}

/** The outlying ranks of each figure, named (those of analysis: 5 % from the median and a robust z-score over 3.5). */
export function outlierList(cl: ClusterResponse, id: string): HTMLElement {
  const found = cl.distributions.filter((dist) => dist.outliers_total > 0);
  if (!found.length) return h("p", { id, class: "muted", text: `No outlying rank: every figure of the ${cl.ranks.length} ranks is within 5 % of its median or within the spread of the others.` });
  return h(
    "ul",
    { id, class: "suggestions" },
    ...found.map((dist) => {
      const named = dist.outliers.map((o) => `rank ${o.rank} (${ms(o.value)} ms, ${o.side})`).join(", ");
      const more = dist.outliers_total - dist.outliers.length;
      return h(
        "li",
        { class: "sev-warning", "data-metric": dist.metric, "data-ranks": dist.outliers.map((o) => o.rank).join(" ") },
        h("span", { class: "badge", text: `${dist.outliers_total} outlier${dist.outliers_total === 1 ? "" : "s"}` }),
        h("strong", { text: `${label(dist.metric)}: ` }),
        `${named}${more > 0 ? ` and ${more} more` : ""}; median ${ms(dist.median)} ms.`,
      );
    }),
  );
}

/** One row per figure: its quartiles, extremes and the ranks at both ends. */
export function spreadTable(cl: ClusterResponse, id: string): HTMLTableElement {
  const table = h("table", { id, class: "data-table" });
  const head = ["Figure (ms)", "Min", "Q1", "Median", "Q3", "Max", "Highest ranks", "Lowest ranks", "Outliers"];
  table.append(h("thead", {}, h("tr", {}, ...head.map((text, i) => h("th", { class: i > 0 && i < 6 ? "num" : "", text })))));
  const body = h("tbody");
  for (const dist of cl.distributions)
    body.append(
      h(
        "tr",
        { "data-metric": dist.metric },
        h("td", { text: label(dist.metric) }),
        ...[dist.min, dist.q1, dist.median, dist.q3, dist.max].map((value) => h("td", { class: "num", text: ms(value) })),
        h("td", { class: "text", text: rankList(dist.top) }),
        h("td", { class: "text", text: rankList(dist.bottom) }),
        h("td", { class: "text", text: dist.outliers_total ? rankList(dist.outliers) : "none" }),
      ),
    );
  table.append(body);
  return table;
}

/** Heat map: ranks across, figures down, each cell the rank's value over the figure's median. */
export function drawHeatmap(el: HTMLElement, cl: ClusterResponse): RawChart {
  const heat = cl.rank_heatmap;
  const data: (number | null)[][] = [];
  heat.ratio_to_median.forEach((row, metric) => row.forEach((ratio, index) => data.push([index, metric, ratio])));
  const chart = new RawChart(el);
  const tooltip = (value: (number | null)[]) => {
    const rank = heat.ranks[value[0] as number];
    const metric = heat.metrics[value[1] as number];
    const row = cl.ranks[value[0] as number];
    const ns = row ? (row as unknown as Record<string, number>)[metric] : -1;
    return tipLines(`rank ${rank}: ${label(metric)}`, [`${ms(ns)} ms`, value[2] === null ? "median 0" : `${(value[2] as number).toFixed(3)} × the median`]);
  };
  chart.set({
    tooltip: { confine: true, formatter: (item: { value: (number | null)[] }) => tooltip(item.value) },
    grid: { left: 8, right: 16, top: 8, bottom: 64, containLabel: true },
    xAxis: { type: "category", name: "rank", nameLocation: "middle", nameGap: 24, data: heat.ranks.map(String) },
    yAxis: { type: "category", data: heat.metrics.map(label), inverse: true },
    visualMap: {
      min: 0,
      max: 2,
      calculable: true,
      orient: "horizontal",
      left: "center",
      bottom: 0,
      dimension: 2,
      formatter: (value: number) => `${value.toFixed(2)} × median`,
      inRange: { color: ["#1565c0", "#ffffff", "#c62828"] },
    },
    series: [{ type: "heatmap", data, progressive: 0 }],
  });
  return chart;
}

/** A box per figure (min, quartiles, max) with the outlying ranks as labelled points. */
export function drawBoxes(el: HTMLElement, dists: Distribution[]): RawChart {
  const chart = new RawChart(el);
  const points = dists.flatMap((dist, i) => dist.outliers.map((o) => ({ value: [i, o.value / 1e6], name: `rank ${o.rank}` })));
  chart.set({
    tooltip: {
      confine: true,
      formatter: (item: { seriesType: string; dataIndex: number; name: string; value: number[] }) => {
        if (item.seriesType === "scatter") return tipLines(item.name, [`${item.value[1].toFixed(3)} ms`]);
        const dist = dists[item.dataIndex];
        return tipLines(label(dist.metric), [`min ${ms(dist.min)}`, `Q1 ${ms(dist.q1)}`, `median ${ms(dist.median)}`, `Q3 ${ms(dist.q3)}`, `max ${ms(dist.max)} ms`]);
      },
    },
    grid: { left: 8, right: 16, top: 16, bottom: 24, containLabel: true },
    xAxis: { type: "category", data: dists.map((dist) => label(dist.metric)) },
    yAxis: { type: "value", name: "ms" },
    series: [
      { type: "boxplot", name: "ranks", data: dists.map((dist) => [dist.min, dist.q1, dist.median, dist.q3, dist.max].map((ns) => ns / 1e6)) },
      { type: "scatter", name: "outliers", data: points, itemStyle: { color: "#c62828" }, label: { show: true, position: "right", formatter: (p: { name: string }) => p.name } },
    ],
  });
  return chart;
}

/** The communication matrix with the ranks in bins (a thousand ranks would be a million cells). */
export function drawBinnedMatrix(el: HTMLElement, bins: MatrixBins): RawChart {
  const names = bins.bins.map((bin) => (bin.first === bin.last ? `${bin.first}` : `${bin.first}–${bin.last}`));
  const data = bins.cells.map((cell) => [cell.dst, cell.src, +(cell.bytes / 1048576).toFixed(1), cell.time_ns]);
  const chart = new RawChart(el);
  chart.set({
    tooltip: {
      confine: true,
      formatter: (item: { value: number[] }) =>
        tipLines(`ranks ${names[item.value[1]]} → ranks ${names[item.value[0]]}`, [`${mb(item.value[2] * 1048576)} MB`, item.value[3] > 0 ? `${ms(item.value[3])} ms` : "time unknown"]),
    },
    grid: { left: 8, right: 80, top: 16, bottom: 40, containLabel: true },
    xAxis: { type: "category", name: "to", data: names },
    yAxis: { type: "category", name: "from", data: names },
    visualMap: { min: 0, max: Math.max(1, ...data.map((cell) => cell[2])), calculable: true, orient: "vertical", right: 0, top: "middle", dimension: 2, inRange: { color: ["#fff3e0", "#f57c00", "#bf360c"] } },
    series: [{ type: "heatmap", data }],
  });
  return chart;
}

/** The spread of a big run: outliers named, heat map, boxes, table; charts drawn once in the document. */
export function spreadParts(cl: ClusterResponse, prefix: string, charts: RawChart[], signal: AbortSignal): HTMLElement[] {
  const heatEl = h("div", { id: `${prefix}-heatmap`, class: "chart", "data-ranks": cl.rank_heatmap.ranks.length });
  const boxEl = h("div", { id: `${prefix}-boxes`, class: "chart small" });
  queueMicrotask(() => {
    if (signal.aborted) return;
    charts.push(drawHeatmap(heatEl, cl), drawBoxes(boxEl, cl.distributions));
  });
  return [
    h("h4", { text: `Outlying ranks (of ${cl.ranks.length})` }),
    outlierList(cl, `${prefix}-outliers`),
    h("h4", { text: "Each rank's figures over the median of all ranks" }),
    heatEl,
    h("div", { class: "grid2" }, h("div", {}, h("h4", { text: "Spread over the ranks" }), boxEl), h("div", { class: "table-wrap short" }, spreadTable(cl, `${prefix}-spread`))),
  ];
}
