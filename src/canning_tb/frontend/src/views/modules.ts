// Modules: the nn.Module tree of the window (traces recorded with with_modules=True or
// with_stack=True): a table in tree order with host / device total and self times, and a flame
// graph of the hierarchy by host or device total time.
import { windowParams, type ModuleNode, type ModulesResponse } from "../api";
import { h, option } from "../dom";
import { FlameChart, type FlameNode } from "../flame";
import { int, us } from "../format";
import { tip } from "../glossary";
import { card, fetchOr, problemsList } from "./common";
import { showEmpty, showLoading, type ViewDef, type ViewHost } from "./view";

type Metric = "host_total_ns" | "device_total_ns";

const COLUMNS: [keyof ModuleNode, string, string][] = [
  ["calls", "Calls", "Calls of the module in the window"],
  ["operators", "Operators", tip("module_operators")],
  ["host_total_ns", "Host Total (µs)", tip("module_host_total")],
  ["host_self_ns", "Host Self (µs)", tip("module_host_self")],
  ["device_total_ns", "Device Total (µs)", tip("module_device_total")],
  ["device_self_ns", "Device Self (µs)", tip("module_device_self")],
];

function treeTable(nodes: ModuleNode[]): HTMLTableElement {
  const head = h("tr", {}, h("th", { text: "Module", title: "Module instance (class_index), indented under its parent" }), ...COLUMNS.map(([, label, tip]) => h("th", { class: "num", text: label, title: tip })));
  const body = h("tbody");
  for (const node of nodes) {
    const name = h("td", { class: "name", title: node.path, text: node.name });
    name.style.paddingLeft = `${0.5 + 1.2 * node.depth}em`;
    const cells = COLUMNS.map(([key]) => {
      const value = node[key] as number;
      return h("td", { class: "num", text: key === "calls" || key === "operators" ? int(value) : us(value) });
    });
    body.append(h("tr", { "data-path": node.path }, name, ...cells));
  }
  return h("table", { id: "module-table", class: "data-table" }, h("thead", {}, head), body);
}

function flameNodes(nodes: ModuleNode[], metric: Metric): FlameNode[] {
  return nodes.map((node) => ({
    label: node.name,
    parent: node.parent,
    value: node[metric],
    tip: [
      node.path,
      `Calls ${int(node.calls)}`,
      `Host total ${us(node.host_total_ns)} µs, self ${us(node.host_self_ns)} µs`,
      `Device total ${us(node.device_total_ns)} µs, self ${us(node.device_self_ns)} µs`,
    ],
  }));
}

function show(host: ViewHost, data: ModulesResponse): void {
  const nodes = data.modules;
  const hasDevice = nodes.some((n) => n.device_total_ns > 0);
  const flameEl = h("div", { id: "module-flame", class: "chart" });
  const metricSel = h("select", { id: "module-metric", "aria-label": "Flame graph width" });
  metricSel.append(option("host_total_ns", "Host total time", !hasDevice));
  if (hasDevice) metricSel.append(option("device_total_ns", "Device total time", true));
  const flame = new FlameChart(flameEl);
  host.signal.addEventListener("abort", () => flame.dispose());
  host.el.replaceChildren(
    ...[problemsList(data.problems, "module-problems")].filter((el): el is HTMLElement => !!el),
    card("Module hierarchy (flame graph: width = time, children under their parent)", h("div", { class: "toolbar" }, h("label", {}, "Width ", metricSel)), flameEl),
    h("section", { class: "card" }, h("h3", { class: "section-title", text: `Modules (${int(nodes.length)})` }), h("div", { class: "table-wrap" }, treeTable(nodes))),
  );
  const draw = () => flame.show(flameNodes(nodes, metricSel.value as Metric));
  metricSel.onchange = draw;
  draw();
  host.setState("loaded");
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Reading the module tree of this window…");
  const data = await fetchOr<ModulesResponse>(host, "modules", windowParams(host.sel));
  if (!data) return;
  if (!data.modules.length) {
    showEmpty(
      host,
      "No nn.Module calls in this window",
      "The trace holds no module events: they are recorded with torch.profiler.profile(with_modules=True, with_stack=True) (torch_npu: with_modules / with_stack).",
      "The Operators view shows the time per operator.",
    );
    return;
  }
  show(host, data);
}

export const modulesView: ViewDef = {
  id: "modules",
  title: "Modules",
  mount(host) {
    void load(host);
  },
};
