// Kernels: device kernels by name or by name + launching operator, with the share of device time,
// Tensor Core use (GPU) or accelerator core and block dim (NPU), a pie of the top kernels and a
// pie of the cores.
import { windowParams } from "../api";
import { Chart, type Item } from "../chart";
import { h, option } from "../dom";
import { fixed2, int, pct, us } from "../format";
import { card, downloadCSV, fetchOr, problemsList, safeName, SortTable, type Col, type Problem } from "./common";
import { showEmpty, showLoading, type ViewDef, type ViewHost } from "./view";

interface Kernel {
  name: string;
  op_name: string;
  calls: number;
  total_ns: number;
  min_ns: number;
  max_ns: number;
  device: number;
  stream: number;
  core: string;
  mean_blocks: number;
  tensor_cores: boolean;
  communication: boolean;
}
interface CoreStat {
  core: string;
  calls: number;
  total_ns: number;
}
interface KernelsResponse {
  info: { format: string; devices: { kind: string }[] };
  problems: Problem[];
  kernels_by_name: Kernel[];
  kernels_by_op: Kernel[];
  cores: CoreStat[];
}

const prefs = { group: "name" as "name" | "op", search: "" };

function columns(npu: boolean, byOp: boolean, total: number, blocks: boolean): Col<Kernel>[] {
  const mean = (k: Kernel) => (k.calls > 0 ? k.total_ns / k.calls : -1);
  const cols: Col<Kernel>[] = [{ key: "name", label: "Name", value: (k) => k.name, cls: "name", tip: "Kernel name" }];
  if (byOp) cols.push({ key: "op_name", label: "Operator", value: (k) => k.op_name, tip: "Operator that launched the kernel" });
  cols.push(
    { key: "calls", label: "Calls", num: true, value: (k) => k.calls, fmt: (k) => int(k.calls) },
    { key: "total_ns", label: "Total (µs)", num: true, value: (k) => k.total_ns / 1000, fmt: (k) => us(k.total_ns) },
    { key: "mean_ns", label: "Mean (µs)", num: true, value: (k) => mean(k) / 1000, fmt: (k) => us(mean(k)) },
    { key: "min_ns", label: "Min (µs)", num: true, value: (k) => k.min_ns / 1000, fmt: (k) => us(k.min_ns) },
    { key: "max_ns", label: "Max (µs)", num: true, value: (k) => k.max_ns / 1000, fmt: (k) => us(k.max_ns) },
    {
      key: "share",
      label: "Device time (%)",
      num: true,
      tip: "Share of the time of all kernels",
      value: (k) => (total > 0 ? (100 * k.total_ns) / total : 0),
      fmt: (k) => pct(total > 0 ? k.total_ns / total : -1),
    },
  );
  if (npu) cols.push({ key: "core", label: "Core", value: (k) => k.core, tip: "Accelerator core the kernel ran on (AI Core, AI Vector Core, AI CPU, HCCL…)" });
  else cols.push({ key: "tensor_cores", label: "Tensor Cores", value: (k) => (k.tensor_cores ? "Yes" : "No"), tip: "The kernel's name says it uses Tensor Cores" });
  if (blocks) cols.push({ key: "mean_blocks", label: npu ? "Mean Block Dim" : "Mean Blocks", num: true, value: (k) => k.mean_blocks, fmt: (k) => fixed2(k.mean_blocks), tip: npu ? "Mean block dim per launch" : "Mean grid blocks per launch" });
  return cols;
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Computing the kernel statistics of this window…");
  const data = await fetchOr<KernelsResponse>(host, "kernels", windowParams(host.sel));
  if (!data) return;
  if (!data.kernels_by_name.length) {
    showEmpty(
      host,
      "No device kernels in this window",
      "The profile holds no GPU or NPU kernel: it was recorded on the CPU only, or the device activity was not enabled.",
      "Profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] (GPU) or torch_npu's ProfilerActivity.NPU (Ascend) to see kernels. The Operators view shows the host time.",
    );
    return;
  }
  const npu = data.kernels_by_name.some((k) => k.core !== "");
  const blocks = data.kernels_by_name.some((k) => k.mean_blocks > 0);
  const total = data.kernels_by_name.reduce((s, k) => s + k.total_ns, 0);
  const byOpAvailable = data.kernels_by_op.length > 0;
  if (!byOpAvailable) prefs.group = "name";

  const table = new SortTable<Kernel>("kernel-table", columns(npu, prefs.group === "op", total, blocks), "total_ns", true, "No kernel matches the search.");
  const count = h("span", { id: "kernel-count", class: "muted" });
  const groupSel = h("select", { id: "kernel-group", "aria-label": "Group by" });
  groupSel.append(option("name", "Kernel name", prefs.group === "name"));
  if (byOpAvailable) groupSel.append(option("op", "Kernel name + operator", prefs.group === "op"));
  const search = h("input", { id: "kernel-search", type: "search", placeholder: "Search kernels by name", "aria-label": "Search kernels by name" });
  search.value = prefs.search;
  const csv = h("button", { id: "kernel-csv", type: "button", class: "button", title: "Download the rows shown as CSV (µs)" }, "Download CSV");

  const refresh = () => {
    const all = prefs.group === "op" ? data.kernels_by_op : data.kernels_by_name;
    const q = prefs.search.trim().toLowerCase();
    const rows = q ? all.filter((k) => k.name.toLowerCase().includes(q) || k.op_name.toLowerCase().includes(q)) : all;
    table.setColumns(columns(npu, prefs.group === "op", total, blocks));
    table.setRows(rows);
    count.textContent = rows.length === all.length ? `${int(all.length)} kernels` : `${int(rows.length)} of ${int(all.length)} kernels match “${q}”`;
  };
  groupSel.onchange = () => {
    prefs.group = groupSel.value as "name" | "op";
    refresh();
  };
  search.oninput = () => {
    prefs.search = search.value;
    refresh();
  };
  csv.onclick = () => {
    const [head, rows] = table.csv();
    const s = host.sel;
    downloadCSV(`kernels-${safeName(s.run)}-${safeName(s.worker)}-${safeName(s.window)}-${prefs.group}.csv`, head, rows);
  };

  const topEl = h("div", { id: "kernel-top-chart", class: "chart" });
  const coreEl = h("div", { id: "kernel-core-chart", class: "chart" });
  host.el.replaceChildren(
    ...[problemsList(data.problems, "kernel-problems")].filter((x): x is HTMLElement => !!x),
    h(
      "div",
      { class: "grid2" },
      card("Top 10 kernels by total time (µs)", topEl),
      card(npu ? "Device time by accelerator core (µs)" : "Device time on Tensor Cores (µs)", coreEl),
    ),
    h("div", { class: "toolbar" }, h("label", {}, "Group by ", groupSel), h("label", { class: "grow" }, search), csv),
    h("section", { class: "card" }, h("div", { class: "table-head" }, h("h3", { class: "section-title", text: "Kernels" }), count), h("div", { class: "table-wrap" }, table.el)),
  );
  refresh();

  const top = new Chart(topEl);
  const cores = new Chart(coreEl);
  host.signal.addEventListener("abort", () => {
    top.dispose();
    cores.dispose();
  });
  const topItems: Item[] = data.kernels_by_name
    .slice()
    .sort((a, b) => b.total_ns - a.total_ns)
    .slice(0, 10)
    .map((k) => ({ label: k.name, value: k.total_ns / 1000, text: us(k.total_ns) }));
  topEl.dataset.items = String(topItems.length);
  top.show("pie", topItems, "Total (µs)");
  const coreItems: Item[] = data.cores.map((c) => ({ label: c.core, value: c.total_ns / 1000, text: `${us(c.total_ns)} (${int(c.calls)} calls)` }));
  coreEl.dataset.items = String(coreItems.length);
  cores.show("pie", coreItems, "Total (µs)");
  host.setState("loaded");
}

export const kernelsView: ViewDef = {
  id: "kernels",
  title: "Kernels",
  mount(host) {
    void load(host);
  },
};
