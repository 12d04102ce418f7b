// Kernels: device kernels by name or by name + launching operator, with the share of device time,
// Tensor Core use (GPU) or accelerator core and block dim (NPU), a pie of the top kernels and a
// pie of the cores. Measured columns where the trace carries them: GPU blocks per SM, est. achieved
// occupancy, registers and shared memory; NPU MIX block dim and the PMU ratios.
import { windowParams, type KernelsResponse, type KernelStat } from "../api";
import { Chart, type Item } from "../chart";
import { h, option } from "../dom";
import { fixed2, int, pct, us } from "../format";
import { tip } from "../glossary";
import type { KernelsOptions } from "../state";
import { card, fetchOr, problemsList, safeName, SortTable, type Col } from "./common";
import { openTimelineAt } from "./timeline_link";
import { showEmpty, showLoading, type ViewDef, type ViewHost } from "./view";
import { anyWork, sharePct, workColumns } from "./work_columns";

type Kernel = KernelStat;

function columns(npu: boolean, byOp: boolean, total: number, blocks: boolean): Col<Kernel>[] {
  const mean = (k: Kernel) => (k.calls > 0 ? k.total_ns / k.calls : -1);
  const cols: Col<Kernel>[] = [{ key: "name", label: "Name", value: (k) => k.name, cls: "name", tip: "Kernel name" }];
  if (byOp) cols.push({ key: "op_name", label: "Operator", value: (k) => k.op_name, tip: "Operator that launched the kernel" });
  cols.push(
    { key: "calls", label: "Calls", num: true, value: (k) => k.calls, fmt: (k) => int(k.calls), tip: tip("kernel_calls") },
    { key: "total_ns", label: "Total (µs)", num: true, value: (k) => k.total_ns / 1000, fmt: (k) => us(k.total_ns), tip: tip("kernel_total") },
    { key: "mean_ns", label: "Mean (µs)", num: true, value: (k) => mean(k) / 1000, fmt: (k) => us(mean(k)), tip: tip("kernel_mean") },
    { key: "min_ns", label: "Min (µs)", num: true, value: (k) => k.min_ns / 1000, fmt: (k) => us(k.min_ns), tip: tip("kernel_min") },
    { key: "max_ns", label: "Max (µs)", num: true, value: (k) => k.max_ns / 1000, fmt: (k) => us(k.max_ns), tip: tip("kernel_max") },
    {
      key: "share",
      label: "Device time (%)",
      num: true,
      tip: tip("kernel_share"),
      value: (k) => (total > 0 ? (100 * k.total_ns) / total : 0),
      fmt: (k) => pct(total > 0 ? k.total_ns / total : -1),
    },
  );
  if (npu) cols.push({ key: "core", label: "Core", value: (k) => k.core, tip: "Accelerator core the kernel ran on (AI Core, AI Vector Core, AI CPU, HCCL…)" });
  else cols.push({ key: "tensor_cores", label: "Tensor Cores", value: (k) => (k.tensor_cores ? "Yes" : "No"), tip: "The kernel's name says it uses Tensor Cores" });
  if (blocks) cols.push({ key: "mean_blocks", label: npu ? "Mean Block Dim" : "Mean Blocks", num: true, value: (k) => k.mean_blocks ?? -1, fmt: (k) => fixed2(k.mean_blocks ?? -1), tip: npu ? "Mean block dim per launch" : "Mean grid blocks per launch" });
  return cols;
}

/** The measured columns the window's kernels carry (none when no kernel has the value). */
interface Measured {
  gpu: (keyof KernelStat)[];
  mix: boolean;
  pmu: string[];
}

function measured(kernels: Kernel[]): Measured {
  const has = (field: keyof KernelStat) => kernels.some((k) => ((k[field] as number | null) ?? -1) >= 0);
  const gpu = (["mean_blocks_per_sm", "mean_occupancy_pct", "registers_per_thread", "shared_memory_bytes"] as (keyof KernelStat)[]).filter(has);
  const pmu = [...new Set(kernels.flatMap((k) => Object.keys(k.pmu)))].sort();
  return { gpu, mix: kernels.some((k) => (k.mean_mix_block_dim ?? -1) > 0), pmu };
}

const GPU_COLUMNS: Record<string, { label: string; tip: string; fmt: (v: number) => string }> = {
  mean_blocks_per_sm: { label: "Mean Blocks per SM", tip: tip("blocks_per_sm"), fmt: fixed2 },
  mean_occupancy_pct: { label: "Mean Est. Achieved Occupancy (%)", tip: tip("kernel_occupancy"), fmt: fixed2 },
  registers_per_thread: { label: "Registers per Thread", tip: tip("registers_per_thread"), fmt: int },
  shared_memory_bytes: { label: "Shared Memory (bytes)", tip: tip("shared_memory"), fmt: int },
};

/** The FLOPs / rates columns (analysis/efficiency) and, on an NPU with PMU data, the pipes' busy shares:
 * in a table of their own under the kernels (beside the GPU's measured columns they would not fit 1,280 px). */
function workAndPipes(kernels: Kernel[]): Col<Kernel>[] {
  const cols = anyWork(kernels, (k) => k.work) ? workColumns<Kernel>((k) => k.work, "work.", true) : [];
  if (kernels.some((k) => (k.pipes ?? []).length)) {
    const text = (k: Kernel) => (k.pipes ?? []).slice(0, 3).map((p) => `${p.pipe} ${sharePct(p.share ?? -1)}`).join(" · ") || "–";
    cols.push({ key: "pipes", label: "Busiest Pipes (%)", tip: tip("pipe_share"), value: (k) => (k.pipes ?? [])[0]?.share ?? -1, fmt: text, title: text });
  }
  return cols;
}

function measuredColumns(m: Measured): Col<Kernel>[] {
  const cols: Col<Kernel>[] = m.gpu.map((field) => {
    const spec = GPU_COLUMNS[field];
    const get = (k: Kernel) => (k[field] as number | null) ?? -1;
    return { key: field, label: spec.label, num: true, tip: spec.tip, value: get, fmt: (k: Kernel) => spec.fmt(get(k)) };
  });
  if (m.mix) cols.push({ key: "mean_mix_block_dim", label: "Mean Mix Block Dim", num: true, tip: tip("mix_block_dim"), value: (k) => k.mean_mix_block_dim ?? -1, fmt: (k) => fixed2(k.mean_mix_block_dim ?? -1) });
  return cols;
}

/** The NPU PMU ratios, in a table of their own under the kernels: beside the times, their ten or
 * more columns would not fit the card at 1,280 px. */
function pmuColumns(m: Measured, total: number): Col<Kernel>[] {
  const [name, calls, total_ns] = columns(true, false, total, false);
  const pmu = m.pmu.map((key): Col<Kernel> => {
    const get = (k: Kernel) => k.pmu[key] ?? -1;
    return { key: `pmu:${key}`, label: key, num: true, tip: tip("pmu_ratio"), value: get, fmt: (k) => fixed2(get(k)) };
  });
  return [name, calls, total_ns, ...pmu];
}

function showNoKernels(host: ViewHost): void {
  showEmpty(
    host,
    "No device kernels in this window",
    "The profile holds no GPU or NPU kernel: it was recorded on the CPU only, or the device activity was not enabled.",
    "Profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] (GPU) or torch_npu's ProfilerActivity.NPU (Ascend) to see kernels. The Operators view shows the host time.",
  );
}

/** The Kernels view of one window: the table follows the state's group and search. */
class KernelsPanel {
  private readonly npu: boolean;
  private readonly blocks: boolean;
  private readonly byOpAvailable: boolean;
  private readonly measured: Measured;
  private table: SortTable<Kernel>;
  private pmuTable: SortTable<Kernel> | null = null;
  private workTable: SortTable<Kernel> | null = null;
  private count = h("span", { id: "kernel-count", class: "muted" });

  constructor(
    private host: ViewHost,
    private data: KernelsResponse,
  ) {
    this.npu = data.kernels_by_name.some((k) => k.core !== "");
    this.blocks = data.kernels_by_name.some((k) => (k.mean_blocks ?? -1) > 0);
    this.byOpAvailable = data.kernels_by_op.length > 0;
    this.measured = measured(data.kernels_by_name);
    this.table = new SortTable<Kernel>("kernel-table", this.columns(), "total_ns", true, "No kernel matches the search.", undefined, {
      decorateRow: (kernel, row) => {
        row.title = "Double-click: the longest call in the Timeline";
        row.ondblclick = () => openTimelineAt(host.store, kernel.name);
        return null;
      },
    });
    const work = workAndPipes(data.kernels_by_name);
    if (work.length) this.workTable = new SortTable<Kernel>("kernel-work-table", [...columns(this.npu, false, data.total_ns, false).slice(0, 3), ...work], "total_ns", true, "No kernel matches the search.");
    if (this.measured.pmu.length) this.pmuTable = new SortTable<Kernel>("kernel-pmu-table", pmuColumns(this.measured, data.total_ns), "total_ns", true, "No kernel matches the search.");
  }

  private options(): KernelsOptions {
    const opts = this.host.store.state.kernels;
    return this.byOpAvailable ? opts : { ...opts, group: "name" };
  }

  private columns(): Col<Kernel>[] {
    return [
      ...columns(this.npu, this.options().group === "op", this.data.total_ns, this.blocks),
      ...measuredColumns(this.measured),
    ];
  }

  private toolbar(): HTMLElement {
    const opts = this.options();
    const store = this.host.store;
    const groupSel = h("select", { id: "kernel-group", "aria-label": "Group by" });
    groupSel.append(option("name", "Kernel name", opts.group === "name"));
    if (this.byOpAvailable) groupSel.append(option("op", "Kernel name + operator", opts.group === "op"));
    groupSel.onchange = () => this.change(() => store.kernels({ group: groupSel.value as KernelsOptions["group"] }));
    const search = h("input", { id: "kernel-search", type: "search", placeholder: "Search kernels by name", "aria-label": "Search kernels by name" });
    search.value = opts.search;
    search.oninput = () => this.change(() => store.kernels({ search: search.value }));
    const csv = h("a", { id: "kernel-csv", class: "button", title: "Download every kernel that matches the search as CSV (times in ns)" }, "Download CSV");
    csv.onclick = () => {
      // the server's download: every row (the table holds the longest 1,000), formulas neutralised
      const sel = this.host.sel;
      const params = { ...windowParams(sel), group_by: this.options().group, search: this.options().search.trim(), sort: "total_ns" };
      csv.setAttribute("href", `./kernels.csv?${new URLSearchParams(params).toString()}`);
      csv.setAttribute("download", `kernels-${safeName(sel.run)}-${safeName(sel.worker)}-${safeName(sel.window)}-${this.options().group}.csv`);
    };
    return h("div", { class: "toolbar" }, h("label", {}, "Group by ", groupSel), h("label", { class: "grow" }, search), csv);
  }

  /** Changes the state, then redraws the table from it. */
  private change(update: () => void): void {
    update();
    this.refresh();
  }

  private refresh(): void {
    const opts = this.options();
    const all = opts.group === "op" ? this.data.kernels_by_op : this.data.kernels_by_name;
    const query = opts.search.trim().toLowerCase();
    const rows = query ? all.filter((k) => k.name.toLowerCase().includes(query) || k.op_name.toLowerCase().includes(query)) : all;
    this.table.setColumns(this.columns());
    this.table.setRows(rows);
    this.pmuTable?.setRows(rows);
    this.workTable?.setRows(rows.filter((k) => k.work?.model || (k.pipes ?? []).length));
    const whole = opts.group === "op" ? this.data.kernels_by_op_all : this.data.kernels_by_name_all;
    const cut = whole > all.length ? ` (the ${int(all.length)} longest of ${int(whole)}: the CSV has every one)` : "";
    this.count.textContent = (rows.length === all.length ? `${int(all.length)} kernels` : `${int(rows.length)} of ${int(all.length)} kernels match “${query}”`) + cut;
  }

  show(): void {
    const topEl = h("div", { id: "kernel-top-chart", class: "chart" });
    const coreEl = h("div", { id: "kernel-core-chart", class: "chart" });
    this.host.el.replaceChildren(
      ...[problemsList(this.data.problems, "kernel-problems")].filter((el): el is HTMLElement => !!el),
      h(
        "div",
        { class: "grid2" },
        card("Top 10 kernels by total time (µs)", topEl),
        card(this.npu ? "Device time by accelerator core (µs)" : "Device time on Tensor Cores (µs)", coreEl),
      ),
      this.toolbar(),
      h("section", { class: "card" }, h("div", { class: "table-head" }, h("h3", { class: "section-title", text: "Kernels" }), this.count), h("div", { class: "table-wrap" }, this.table.el)),
      ...(this.workTable ? [card("Kernels against the device's roofs (the Roofline view has every figure)", this.workTable.el)] : []),
      ...(this.pmuTable ? [card("PMU ratios per kernel (the profile's aic_metrics)", this.pmuTable.el)] : []),
    );
    this.refresh();
    this.drawCharts(topEl, coreEl);
    this.host.setState("loaded");
  }

  private drawCharts(topEl: HTMLElement, coreEl: HTMLElement): void {
    const top = new Chart(topEl);
    const cores = new Chart(coreEl);
    this.host.signal.addEventListener("abort", () => {
      top.dispose();
      cores.dispose();
    });
    // the route lists kernels_by_name by total time, largest first
    const topItems: Item[] = this.data.kernels_by_name.slice(0, 10).map((k) => ({ label: k.name, value: k.total_ns / 1000, text: us(k.total_ns) }));
    topEl.dataset.items = String(topItems.length);
    top.show("pie", topItems, "Total (µs)");
    const coreItems: Item[] = this.data.cores.map((core) => ({ label: core.core, value: core.total_ns / 1000, text: `${us(core.total_ns)} (${int(core.calls)} calls)` }));
    coreEl.dataset.items = String(coreItems.length);
    cores.show("pie", coreItems, "Total (µs)");
  }
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Computing the kernel statistics of this window…");
  // the longest first: a window with more kernels than a page (1,000) shows the ones that matter
  const data = await fetchOr<KernelsResponse>(host, "kernels", { ...windowParams(host.sel), sort: "total_ns" });
  if (!data) return;
  if (!data.kernels_by_name.length) showNoKernels(host);
  else new KernelsPanel(host, data).show();
}

export const kernelsView: ViewDef = {
  id: "kernels",
  title: "Kernels",
  mount(host) {
    void load(host);
  },
};
