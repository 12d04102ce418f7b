// The overview's device efficiency card: per GPU utilization, est. SM efficiency, est. achieved
// occupancy and Tensor Core share; per NPU AI Core utilisation, time per core type and the PMU
// ratios. Figures as analysis computed them (digest GpuEfficiency / NpuEfficiency); "–" = unknown.
import type { GpuEfficiency, NpuEfficiency, OverviewResponse } from "../api";
import { h } from "../dom";
import { fixed2, ms, pct } from "../format";
import { tip } from "../glossary";
import { card } from "./common";

const GPU_ROWS: [string, string, (g: GpuEfficiency) => string][] = [
  ["GPU utilization (%)", tip("gpu_utilization"), (g) => pct(g.utilization ?? -1)],
  ["Est. SM efficiency (%)", tip("sm_efficiency"), (g) => pct(g.sm_efficiency ?? -1)],
  ["Est. achieved occupancy (%)", tip("achieved_occupancy"), (g) => fixed2(g.achieved_occupancy_pct ?? -1)],
  ["Kernel time on Tensor Cores (%)", tip("tensor_core_share"), (g) => pct(g.tensor_core_share ?? -1)],
  ["Step time covered (ms)", "The step time the figures are of", (g) => ms(g.span_ns)],
];

const NPU_ROWS: [string, string, (n: NpuEfficiency) => string][] = [
  ["AI Core utilisation (%)", tip("ai_core_utilization"), (n) => pct(n.ai_core_utilization ?? -1)],
  ["Cube share (%)", tip("cube_share"), (n) => pct(n.cube_share ?? -1)],
  ["Cube / vector / mix / AI CPU (ms)", tip("core_time"), (n) => [n.cube_ns, n.vector_ns, n.mix_ns, n.ai_cpu_ns].map(ms).join(" / ")],
  ["Step time covered (ms)", "The step time the figures are of", (n) => ms(n.span_ns)],
];

function table<T>(id: string, devices: T[], name: (d: T) => string, rows: [string, string, (d: T) => string][]): HTMLTableElement {
  const head = h("tr", {}, h("th", { text: "Figure" }), ...devices.map((d) => h("th", { class: "num", text: name(d) })));
  const body = h("tbody");
  for (const [label, tip, value] of rows) {
    body.append(h("tr", {}, h("th", { scope: "row", text: label, title: tip }), ...devices.map((d) => h("td", { class: "num", text: value(d) }))));
  }
  return h("table", { id, class: "data-table kv" }, h("thead", {}, head), body);
}

function pmuRows(npus: NpuEfficiency[]): [string, string, (n: NpuEfficiency) => string][] {
  const names = [...new Set(npus.flatMap((n) => n.pmu.map((m) => m.name)))].sort();
  return names.map((name) => [name, tip("pmu_ratio"), (n: NpuEfficiency) => fixed2(n.pmu.find((m) => m.name === name)?.value ?? -1)]);
}

/** The card, or null when the window has no GPU or NPU figures (a CPU-only profile). */
export function efficiencyCard(ov: OverviewResponse): HTMLElement | null {
  const parts: HTMLElement[] = [];
  const gpus = ov.gpu_efficiency ?? [];
  const npus = ov.npu_efficiency ?? [];
  if (gpus.length) parts.push(table("ov-gpu-efficiency", gpus, (g) => `GPU ${g.device}: ${g.name}`, GPU_ROWS));
  if (npus.length) {
    parts.push(table("ov-npu-efficiency", npus, (n) => `NPU ${n.device}: ${n.name}`, [...NPU_ROWS, ...pmuRows(npus)]));
    if (!npus.some((n) => n.pmu.length)) parts.push(h("p", { class: "muted", text: "No PMU ratios: profile with aic_metrics (Level1 or Level2) to see them." }));
  }
  if (!parts.length) return null;
  return card(gpus.length ? "GPU efficiency" : "NPU efficiency", h("div", { class: "table-wrap" }, ...parts));
}
