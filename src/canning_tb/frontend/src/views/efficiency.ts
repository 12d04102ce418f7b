// The overview's device efficiency card: per GPU utilization, est. SM efficiency, est. achieved
// occupancy and Tensor Core share; per NPU AI Core utilisation, time per core type and the PMU
// ratios. Figures as analysis computed them (digest GpuEfficiency / NpuEfficiency); "–" = unknown.
import type { GpuEfficiency, NpuEfficiency, OverviewResponse } from "../api";
import { h } from "../dom";
import { fixed2, ms, pct } from "../format";
import { card } from "./common";

const SPAN_TIP = "over the steps the average keeps";

const GPU_ROWS: [string, string, (g: GpuEfficiency) => string][] = [
  ["GPU utilization (%)", `Time with at least one kernel running on this GPU, of the step time ${SPAN_TIP}`, (g) => pct(g.utilization ?? -1)],
  [
    "Est. SM efficiency (%)",
    "Mean over the step time of min(sum of blocks per SM of the running kernels, 1): a kernel with fewer blocks than SMs leaves SMs idle (needs the trace's 'blocks per SM')",
    (g) => pct(g.sm_efficiency ?? -1),
  ],
  [
    "Est. achieved occupancy (%)",
    "The kernels' estimated achieved occupancy, mean weighted by each kernel's time in the steps (needs the trace's 'est. achieved occupancy %')",
    (g) => fixed2(g.achieved_occupancy_pct ?? -1),
  ],
  ["Kernel time on Tensor Cores (%)", "Time of the kernels whose name says Tensor Cores, of all kernel time in the steps (CUDA only)", (g) => pct(g.tensor_core_share ?? -1)],
  ["Step time covered (ms)", "The step time the figures are of", (g) => ms(g.span_ns)],
];

const NPU_ROWS: [string, string, (n: NpuEfficiency) => string][] = [
  ["AI Core utilisation (%)", `Time with at least one AI Core task (cube, vector or mix) running, of the step time ${SPAN_TIP}`, (n) => pct(n.ai_core_utilization ?? -1)],
  ["Cube share (%)", "Cube (AI_CORE) task time of the cube + vector + mix task time in the steps", (n) => pct(n.cube_share ?? -1)],
  ["Cube / vector / mix / AI CPU (ms)", "Task time in the steps by accelerator core, each task once", (n) => [n.cube_ns, n.vector_ns, n.mix_ns, n.ai_cpu_ns].map(ms).join(" / ")],
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
  return names.map((name) => {
    const tip = name.startsWith("aic_")
      ? "PMU, cube core: sum(ratio × cube time) / sum(cube time) over the window's tasks"
      : name.startsWith("aiv_")
        ? "PMU, vector core: sum(ratio × vector time) / sum(vector time) over the window's tasks"
        : "PMU, weighted by task time over the window's tasks";
    return [name, tip, (n: NpuEfficiency) => fixed2(n.pmu.find((m) => m.name === name)?.value ?? -1)];
  });
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
