// Pieces of the Compare view that draw one part of GET /compare's answer: the breakdown bars, the
// memory overlay on the step-aligned axis, the operator tree diff and the small tables. Every
// figure is the route's; these only format and draw.
import type { CategoryDelta, CodeItem, CollectiveDelta, CompareResponse, Contributors, MemoryPair, TreeNode } from "../api";
import { RawChart, tipLines } from "../chart";
import { h } from "../dom";
import { bytes, calls, int, ms } from "../format";

/** "+1.234" / "-0.5" ms, the sign always shown. */
export function deltaMs(ns: number): string {
  return `${ns > 0 ? "+" : ns < 0 ? "−" : "±"}${ms(Math.abs(ns))}`;
}

/** A change in % of the baseline; "new" / "gone" where one side is near zero (the route says so). */
export function deltaPct(pct: number | null, text: "new" | "gone" | "" = ""): string {
  if (text) return text;
  return pct === null ? "–" : `${pct > 0 ? "+" : pct < 0 ? "−" : "±"}${Math.abs(pct).toFixed(1)} %`;
}

export function statusMark(status: string): string {
  return status === "added" ? "added" : status === "removed" ? "removed" : "";
}

function labelOf(category: string): string {
  return category.replace(/_/g, " ");
}

/** Base vs target bars per step category (ms/step); categories zero on both sides are left out. */
export function breakdownChart(el: HTMLElement, rows: CategoryDelta[], signal: AbortSignal): void {
  const shown = rows.filter((r) => r.base_ns > 0 || r.target_ns > 0);
  el.dataset.categories = shown.map((r) => r.category).join(",");
  const chart = new RawChart(el);
  signal.addEventListener("abort", () => chart.dispose());
  chart.set({
    legend: { top: 0 },
    grid: { left: 8, right: 24, top: 28, bottom: 8, containLabel: true },
    tooltip: {
      trigger: "axis",
      confine: true,
      formatter: (points: { dataIndex: number }[]) => {
        const row = shown[points[0].dataIndex];
        return tipLines(labelOf(row.category), [`baseline: ${ms(row.base_ns)} ms`, `target: ${ms(row.target_ns)} ms`, `delta: ${deltaMs(row.delta_ns)} ms`]);
      },
    },
    xAxis: { type: "value", name: "ms / step", nameLocation: "middle", nameGap: 22 },
    yAxis: { type: "category", inverse: true, data: shown.map((r) => labelOf(r.category)) },
    series: [
      { name: "baseline", type: "bar", data: shown.map((r) => r.base_ns / 1e6), barMaxWidth: 14 },
      { name: "target", type: "bar", data: shown.map((r) => r.target_ns / 1e6), barMaxWidth: 14 },
    ],
  });
}

/** The allocated-bytes curves of one device pair overlaid on the step-aligned axis. */
export function memoryChart(el: HTMLElement, pair: MemoryPair, signal: AbortSignal): void {
  el.dataset.device = pair.device;
  el.dataset.points = `${pair.base_x.length},${pair.target_x.length}`;
  const chart = new RawChart(el);
  signal.addEventListener("abort", () => chart.dispose());
  const series = (name: string, xs: number[], ys: number[]) => ({
    name,
    type: "line",
    step: "end",
    showSymbol: false,
    data: xs.map((x, i) => [x, ys[i] / 1048576]),
  });
  chart.set({
    legend: { top: 0 },
    grid: { left: 8, right: 24, top: 28, bottom: 28, containLabel: true },
    tooltip: {
      trigger: "axis",
      confine: true,
      formatter: (points: { seriesName: string; value: [number, number] }[]) =>
        tipLines(`step ${points[0].value[0].toFixed(2)}`, points.map((p) => `${p.seriesName}: ${p.value[1].toFixed(1)} MB`)),
    },
    xAxis: { type: "value", name: "step (aligned)", nameLocation: "middle", nameGap: 22 },
    yAxis: { type: "value", name: "allocated (MB)" },
    series: [series(`baseline ${pair.base_device}`, pair.base_x, pair.base_bytes), series(`target ${pair.target_device}`, pair.target_x, pair.target_bytes)],
  });
}

export function memoryPeaks(pairs: MemoryPair[]): HTMLElement {
  const body = h("tbody");
  for (const p of pairs)
    body.append(
      h(
        "tr",
        {},
        h("td", { class: "text", text: p.device }),
        h("td", { class: "num", text: bytes(p.base_peak_bytes) }),
        h("td", { class: "num", text: bytes(p.target_peak_bytes) }),
        h("td", { class: "num", text: p.ratio === null ? "–" : `${p.ratio.toFixed(2)}×` }),
      ),
    );
  const head = h("tr", {}, ...["Device", "Baseline peak", "Target peak", "Target / baseline"].map((t, i) => h("th", { class: i ? "num" : "", text: t })));
  return h("table", { id: "cmp-memory-peaks", class: "data-table" }, h("thead", {}, head), body);
}

/** The step-time change as the breakdown shows it: each category's delta (they sum to the change),
 * the operators that fall in it indented below it, and the rest of the category. */
/** The named operators' changes first (largest first); what no named operator explains apart, per category:
 * a rest row is never netted against a named change. */
export function contributorsTable(c: Contributors): HTMLElement {
  const row = (cls: string, name: string, delta: number, mark = "", title = name) =>
    h("tr", { class: cls, "data-name": name }, h("td", { class: "name", text: name, title }), h("td", { class: "num", text: deltaMs(delta) }), h("td", { class: "text", text: mark }));
  const named = h("tbody", { class: "named" });
  const ops = c.by_category.flatMap((cat) => cat.operators).sort((a, b) => Math.abs(b.delta_ns) - Math.abs(a.delta_ns));
  for (const o of ops) named.append(row(`operator status-${o.status}`, o.name, o.delta_ns, statusMark(o.status)));
  const rest = h("tbody", { class: "rest-rows" });
  rest.append(h("tr", { class: "subhead" }, h("th", { colspan: "3", class: "muted", text: "Not explained by a named operator (overlap, gaps, work outside operators), per category" })));
  for (const cat of c.by_category) {
    const label = cat.category.replace(/_/g, " ");
    const value = cat.operators.length ? cat.rest_ns : cat.delta_ns;
    if (Math.abs(value) >= 1) rest.append(row("rest muted", `rest of ${label}`, value, "", `${label}: its change in the step breakdown (${deltaMs(cat.delta_ns)} ms) less its named operators'`));
  }
  const head = h("tr", {}, h("th", { text: "Operator" }), h("th", { class: "num", text: "Δ ms / step" }), h("th", { text: "" }));
  const foot = h("tr", {}, h("th", { text: "step time change" }), h("th", { class: "num", text: deltaMs(c.step_delta_ns) }), h("th", {}));
  return h("table", { id: "cmp-contributors", class: "data-table" }, h("thead", {}, head), named, rest, h("tfoot", {}, foot));
}

/** The code's operators: added, removed, other calls, or slower / faster far beyond the machine's factor. */
export function codeItemsTable(items: CodeItem[]): HTMLElement {
  if (!items.length) return h("p", { class: "muted", id: "cmp-code-items", text: "No operator was added, removed, called otherwise or changed beyond the machine's common factor." });
  const body = h("tbody");
  for (const i of items)
    body.append(h("tr", { "data-name": i.name }, h("td", { class: "name", text: i.name, title: i.input_shapes ? `${i.name} ${i.input_shapes}` : i.name }), h("td", { class: "text", text: i.why }),
      h("td", { class: "num", text: ms(i.base_ns) }), h("td", { class: "num", text: ms(i.target_ns) }), h("td", { class: "num", text: deltaMs(i.excess_ns) })));
  const head = h("tr", {}, ...["Operator", "Why", "Base ms", "Target ms", "Beyond the machine, ms"].map((t, i) => h("th", { class: i > 1 ? "num" : "", text: t })));
  return h("table", { id: "cmp-code-items", class: "data-table" }, h("thead", {}, head), body);
}

export function commTable(rows: CollectiveDelta[]): HTMLElement {
  const body = h("tbody");
  for (const r of rows)
    body.append(
      h(
        "tr",
        { class: `status-${r.status}` },
        h("td", { class: "text", text: r.group === "*" ? r.kind : `${r.kind} (${r.group})` }),
        h("td", { class: "num", text: `${calls(r.base_calls)} → ${calls(r.target_calls)}` }),
        h("td", { class: "num", text: ms(r.base_ns) }),
        h("td", { class: "num", text: ms(r.target_ns) }),
        h("td", { class: "num", text: deltaMs(r.delta_ns) }),
        h("td", { class: "num", text: `${bytes(r.base_bytes)} → ${bytes(r.target_bytes)}` }),
      ),
    );
  const head = h("tr", {}, ...["Collective", "Calls / step", "Baseline ms", "Target ms", "Δ ms", "Bytes / step"].map((t, i) => h("th", { class: i ? "num" : "", text: t })));
  return h("table", { id: "cmp-comm", class: "data-table" }, h("thead", {}, head), body);
}

/** One node of the tree diff: a <details> whose children are drawn when it is first opened. */
function treeNode(node: TreeNode, open: boolean): HTMLElement {
  const summary = h(
    "summary",
    { class: `tree-row status-${node.status}` },
    h("span", { class: `tree-name ${node.kind}`, text: node.name, title: node.name }),
    h("span", { class: "num", text: `${ms(node.base_ns)} → ${ms(node.target_ns)} ms` }),
    h("span", { class: "num delta", text: deltaMs(node.delta_ns) }),
    h("span", { class: "muted", text: node.kind === "op" ? `${int(node.base_calls)} → ${int(node.target_calls)} calls ${statusMark(node.status)}` : statusMark(node.status) }),
  );
  const el = h("details", { class: "tree-node", "data-name": node.name, "data-kind": node.kind }, summary);
  let drawn = false;
  const draw = () => {
    if (drawn || !el.open) return;
    drawn = true;
    // a chain of single children (the frames of a deep Python stack) opens as one
    const only = node.children.length === 1;
    el.append(h("div", { class: "tree-children" }, ...node.children.map((c) => treeNode(c, only))));
  };
  el.addEventListener("toggle", draw);
  if (!node.children.length) el.classList.add("leaf");
  el.open = open;
  draw();
  return el;
}

export function treeDiff(data: CompareResponse): HTMLElement {
  const wrap = h("div", { id: "cmp-tree", class: "tree" });
  if (!data.tree.children.length) wrap.append(h("p", { class: "muted", text: "Neither window recorded operators." }));
  else wrap.append(treeNode(data.tree, true));
  return wrap;
}
