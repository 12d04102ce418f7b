// Operators view: one table of the window's operators (from the digest's ops_by_name /
// ops_by_shape / ops_by_stack), sortable, searchable, with a chart of the top N and CSV export.
import { getJSON, windowParams } from "../api";
import { Chart, type Item } from "../chart";
import { clear, h, option } from "../dom";
import { int, us } from "../format";
import { downloadCSV, errorText, fetchOr, problemsList, safeName, SortTable, type Col, type Problem } from "./common";
import { showLoading, type ViewDef, type ViewHost } from "./view";

interface OpRow {
  name: string;
  input_shapes: string;
  call_stack: string;
  calls: number;
  host_self_ns: number;
  host_total_ns: number;
  device_self_ns: number;
  device_total_ns: number;
  kernels?: KernelRef[];
}

interface KernelRef {
  name: string;
  calls: number;
  total_ns: number;
}

interface OperatorDetail {
  name: string;
  input_shapes: string | null;
  stacks_by_shape: boolean;
  stacks: OpRow[];
  kernels: KernelRef[];
}

interface OperatorsResponse {
  group_by: GroupBy;
  has_device: boolean;
  has_stacks: boolean;
  rows: OpRow[];
  problems: Problem[];
}

type GroupBy = "name" | "shape" | "stack";
type Key = "name" | "input_shapes" | "call_stack" | "calls" | "host_self_ns" | "host_total_ns" | "device_self_ns" | "device_total_ns";

type Column = Col<OpRow> & { key: Key; fmt: (r: OpRow) => string };

function col(key: Key, label: string, tip: string, fmt: (r: OpRow) => string, num = true): Column {
  // the name cell is class "name" (it holds the row's toggle); other text cells "text"
  return { key, label, tip, fmt, num, value: (r) => r[key], cls: key === "name" ? "name" : undefined };
}

const COLUMNS: Record<Key, Column> = {
  name: col("name", "Name", "Operator name", (r) => r.name, false),
  input_shapes: col("input_shapes", "Input Shapes", "Shapes of the inputs (record_shapes=True)", (r) => r.input_shapes, false),
  call_stack: col("call_stack", "Call Stack", "Python call stack (with_stack=True)", (r) => r.call_stack, false),
  calls: col("calls", "Calls", "Number of calls in the window", (r) => int(r.calls)),
  host_self_ns: col("host_self_ns", "Host Self (µs)", "Time on the host in the operator itself, children excluded", (r) => us(r.host_self_ns)),
  host_total_ns: col("host_total_ns", "Host Total (µs)", "Time on the host in the operator and its children", (r) => us(r.host_total_ns)),
  device_self_ns: col("device_self_ns", "Device Self (µs)", "Device time of the kernels the operator launched itself", (r) => us(r.device_self_ns)),
  device_total_ns: col("device_total_ns", "Device Total (µs)", "Device time of the kernels launched by the operator and its children", (r) => us(r.device_total_ns)),
};

const GROUP_LABELS: Record<GroupBy, string> = { name: "Operator", shape: "Operator + input shapes", stack: "Operator + call stack" };
const MAX_ROWS = 2000;

// Choices survive switching windows and tabs.
const prefs = {
  groupBy: "name" as GroupBy,
  search: "",
  topN: 10,
  chart: "bar" as "bar" | "pie",
  sortKey: "" as Key | "",
  sortDesc: true,
};

function columnsFor(data: OperatorsResponse): Column[] {
  const cols: Column[] = [COLUMNS.name];
  if (data.group_by === "shape") cols.push(COLUMNS.input_shapes);
  if (data.group_by === "stack") cols.push(COLUMNS.call_stack);
  cols.push(COLUMNS.calls, COLUMNS.host_self_ns, COLUMNS.host_total_ns);
  if (data.has_device) cols.push(COLUMNS.device_self_ns, COLUMNS.device_total_ns);
  return cols;
}

/** A CSV cell: times in µs, calls as counted, a negative (unknown) number empty. */
function csvValue(c: Column, r: OpRow): string | number {
  const v = r[c.key];
  if (typeof v !== "number") return v;
  return v < 0 ? "" : c.key === "calls" ? v : v / 1000;
}

class OperatorsPanel {
  private data!: OperatorsResponse;
  private cols: Column[] = [];
  private chart: Chart | null = null;
  private table = new SortTable<OpRow>("op-table", [], "", true, "", MAX_ROWS, {
    tieBreak: (a, b) => a.name.localeCompare(b.name),
    decorateRow: (r, tr) => this.decorateRow(r, tr),
    onSort: () => {
      prefs.sortKey = this.table.sortKey as Key;
      prefs.sortDesc = this.table.desc;
      this.drawChart(this.table.sorted());
    },
    moreText: ": refine the search, or download the CSV for all.",
  });
  private count = h("span", { id: "op-count", class: "muted" });
  private chartTitle = h("h3", { id: "op-chart-title", class: "section-title" });
  private chartEl = h("div", { id: "op-chart", class: "chart" });
  private groupSel = h("select", { id: "op-group", "aria-label": "Group by" });
  /** rows shown expanded (by rowKey): survives re-sorting, searching and regrouping back */
  private expanded = new Set<string>();
  private details = new Map<string, Promise<OperatorDetail>>();

  constructor(private host: ViewHost) {
    host.signal.addEventListener("abort", () => this.chart?.dispose());
  }

  async load(): Promise<void> {
    const host = this.host;
    showLoading(host, "Computing the operator statistics of this window… (the first open of a big trace takes a while)");
    const data = await fetchOr<OperatorsResponse>(host, "operators", { ...windowParams(host.sel), group_by: prefs.groupBy });
    if (!data) return;
    this.data = data;
    this.build();
  }

  private build(): void {
    const host = this.host;
    const data = this.data;
    this.cols = columnsFor(data);
    if (!prefs.sortKey || !this.cols.some((c) => c.key === prefs.sortKey)) {
      prefs.sortKey = data.has_device ? "device_self_ns" : "host_self_ns";
      prefs.sortDesc = true;
    }
    this.table.sortKey = prefs.sortKey;
    this.table.desc = prefs.sortDesc;
    this.table.setColumns(this.cols);
    clear(host.el);

    // toolbar
    clear(this.groupSel);
    const groups: GroupBy[] = data.has_stacks || prefs.groupBy === "stack" ? ["name", "shape", "stack"] : ["name", "shape"];
    for (const g of groups) this.groupSel.append(option(g, GROUP_LABELS[g], g === prefs.groupBy));
    this.groupSel.onchange = () => {
      prefs.groupBy = this.groupSel.value as GroupBy;
      void this.load();
    };
    const search = h("input", {
      id: "op-search",
      type: "search",
      placeholder: "Search operators by name",
      "aria-label": "Search operators by name",
      value: prefs.search,
    });
    search.value = prefs.search;
    search.oninput = () => {
      prefs.search = search.value;
      this.refresh();
    };
    const topN = h("input", { id: "op-topn", type: "number", min: 1, max: 50, value: prefs.topN, "aria-label": "Top N" });
    topN.oninput = () => {
      const n = Math.round(Number(topN.value));
      if (Number.isFinite(n) && n >= 1) {
        prefs.topN = Math.min(50, n);
        this.drawChart(this.table.sorted());
      }
    };
    const chartSel = h("select", { id: "op-chart-type", "aria-label": "Chart type" });
    chartSel.append(option("bar", "Bar", prefs.chart === "bar"), option("pie", "Pie", prefs.chart === "pie"));
    chartSel.onchange = () => {
      prefs.chart = chartSel.value as "bar" | "pie";
      this.drawChart(this.table.sorted());
    };
    const csv = h("button", { id: "op-csv", type: "button", class: "button", title: "Download the rows shown as CSV (µs)" }, "Download CSV");
    csv.onclick = () => {
      const s = host.sel;
      const rows = this.table.sorted().map((r) => this.cols.map((c) => csvValue(c, r)));
      downloadCSV(`operators-${safeName(s.run)}-${safeName(s.worker)}-${safeName(s.window)}-${prefs.groupBy}.csv`, this.cols.map((c) => c.label), rows);
    };

    const toolbar = h(
      "div",
      { class: "toolbar" },
      h("label", {}, "Group by ", this.groupSel),
      h("label", { class: "grow" }, search),
      h("label", {}, "Top ", topN),
      h("label", {}, "Chart ", chartSel),
      csv,
    );

    const problems = problemsList(data.problems, "op-problems");

    this.chartEl = h("div", { id: "op-chart", class: "chart" });
    host.el.append(
      toolbar,
      problems ?? "",
      h("section", { class: "card" }, this.chartTitle, this.chartEl),
      h("section", { class: "card" }, h("div", { class: "table-head" }, h("h3", { class: "section-title", text: "Operators" }), this.count), h("div", { class: "table-wrap" }, this.table.el)),
    );
    this.chart?.dispose();
    this.chart = new Chart(this.chartEl);
    this.refresh();
    host.setState("loaded");
  }

  /** Filters the rows by the search and redraws the table, the chart and the count. */
  private refresh(): void {
    const q = prefs.search.trim().toLowerCase();
    const all = this.data.rows;
    this.table.setRows(q ? all.filter((r) => r.name.toLowerCase().includes(q)) : all, all.length ? "No operator matches the search." : "This window has no operators.");
    const rows = this.table.sorted();
    this.drawChart(rows);
    const total = this.data.rows.length;
    this.count.textContent =
      rows.length === total ? `${int(total)} operators` : `${int(rows.length)} of ${int(total)} operators match “${prefs.search.trim()}”`;
  }

  private metric(): Column {
    const c = COLUMNS[prefs.sortKey as Key];
    if (c && c.num) return c;
    return this.data.has_device ? COLUMNS.device_self_ns : COLUMNS.host_self_ns;
  }

  private drawChart(rows: OpRow[]): void {
    if (!this.chart) return;
    const m = this.metric();
    const top = rows
      .filter((r) => (r[m.key] as number) > 0)
      .sort((a, b) => (b[m.key] as number) - (a[m.key] as number))
      .slice(0, prefs.topN);
    const items: Item[] = top.map((r) => ({
      label: this.data.group_by === "shape" && r.input_shapes ? `${r.name} ${r.input_shapes}` : r.name,
      value: m.key === "calls" ? r.calls : (r[m.key] as number) / 1000,
      text: m.fmt(r),
    }));
    this.chartTitle.textContent = `Top ${prefs.topN} operators by ${m.label}`;
    this.chartEl.dataset.items = String(items.length);
    this.chart.show(prefs.chart, items, m.label);
  }

  private rowKey(r: OpRow): string {
    return `${this.data.group_by}\u0001${r.name}\u0001${r.input_shapes}\u0001${r.call_stack}`;
  }

  private toggle(r: OpRow): void {
    const key = this.rowKey(r);
    if (this.expanded.has(key)) this.expanded.delete(key);
    else this.expanded.add(key);
    this.table.render();
  }

  private detail(r: OpRow): Promise<OperatorDetail> {
    const shaped = this.data.group_by === "shape";
    const key = `${r.name}\u0001${shaped ? r.input_shapes : ""}`;
    let p = this.details.get(key);
    if (!p) {
      const params: Record<string, string> = { ...windowParams(this.host.sel), detail: r.name };
      if (shaped) params.shapes = r.input_shapes;
      p = getJSON<OperatorDetail>("operators", params, this.host.signal);
      p.catch(() => this.details.delete(key));
      this.details.set(key, p);
    }
    return p;
  }

  private detailRow(r: OpRow): HTMLTableRowElement {
    const body = h("div", { class: "op-detail-body", "data-state": "loading" }, h("span", { class: "spinner" }), "Loading the call stacks and kernels…");
    const tr = h("tr", { class: "op-detail", "data-op": r.name }, h("td", { colspan: this.cols.length }, body));
    this.detail(r).then(
      (d) => {
        if (this.host.signal.aborted) return;
        body.replaceChildren(...this.detailContent(r, d));
        body.dataset.state = "loaded";
      },
      (e) => {
        if (this.host.signal.aborted || (e as Error).name === "AbortError") return;
        body.replaceChildren(h("span", { class: "error-text", text: `Cannot load the details: ${errorText(e)}` }));
        body.dataset.state = "error";
      },
    );
    return tr;
  }

  private detailContent(r: OpRow, d: OperatorDetail): HTMLElement[] {
    const hasDevice = this.data.has_device;
    const stackCols: [string, (s: OpRow) => string][] = [
      ["Calls", (s) => int(s.calls)],
      ["Host Self (µs)", (s) => us(s.host_self_ns)],
      ["Host Total (µs)", (s) => us(s.host_total_ns)],
    ];
    if (hasDevice) stackCols.push(["Device Self (µs)", (s) => us(s.device_self_ns)], ["Device Total (µs)", (s) => us(s.device_total_ns)]);
    const stacks = h("table", { class: "data-table op-stacks" });
    stacks.append(
      h("thead", {}, h("tr", {}, ...stackCols.map(([l]) => h("th", { class: "num", text: l })), h("th", { text: "Call stack (innermost first)" }))),
    );
    const sb = h("tbody");
    for (const s of d.stacks.slice().sort((a, b) => (hasDevice ? b.device_total_ns - a.device_total_ns : 0) || b.host_total_ns - a.host_total_ns)) {
      const frames = s.call_stack.split(";").filter((f) => f.trim() !== "");
      sb.append(
        h(
          "tr",
          {},
          ...stackCols.map(([, f]) => h("td", { class: "num", text: f(s) })),
          h("td", { class: "stack" }, ...frames.map((f) => h("div", { class: "frame", text: f }))),
        ),
      );
    }
    if (!d.stacks.length)
      sb.append(h("tr", { class: "no-rows" }, h("td", { colspan: stackCols.length + 1, text: "No call stack recorded for this operator (profile with with_stack=True)." })));
    stacks.append(sb);
    const kernels = h("table", { class: "data-table op-kernels" });
    kernels.append(h("thead", {}, h("tr", {}, h("th", { text: "Kernel" }), h("th", { class: "num", text: "Calls" }), h("th", { class: "num", text: "Total (µs)" }))));
    const kb = h("tbody");
    for (const k of d.kernels) kb.append(h("tr", {}, h("td", { class: "kname", text: k.name, title: k.name }), h("td", { class: "num", text: int(k.calls) }), h("td", { class: "num", text: us(k.total_ns) })));
    if (!d.kernels.length) kb.append(h("tr", { class: "no-rows" }, h("td", { colspan: 3, text: "This operator launched no kernel itself (its children may have)." })));
    kernels.append(kb);
    const note =
      this.data.group_by === "shape" && !d.stacks_by_shape
        ? h("p", { class: "muted", text: `Call stacks of every ${r.name} call: the profile groups stacks by operator name only, not by input shapes.` })
        : null;
    return [
      h(
        "div",
        { class: "op-detail-grid" },
        h("section", {}, h("h4", { text: `Call stacks (${int(d.stacks.length)})` }), ...(note ? [note] : []), h("div", { class: "table-wrap short" }, stacks)),
        h("section", {}, h("h4", { text: `Kernels launched (${int(d.kernels.length)})` }), h("div", { class: "table-wrap short" }, kernels)),
      ),
    ];
  }

  /** Makes a row open and close its details; returns the details row when it is open. */
  private decorateRow(r: OpRow, row: HTMLTableRowElement): HTMLTableRowElement | null {
    const open = this.expanded.has(this.rowKey(r));
    row.className = `op-row${open ? " open" : ""}`;
    row.setAttribute("aria-expanded", String(open));
    // the arrow is drawn by CSS, so the name cell's text stays the operator's name
    const toggle = h("button", {
      type: "button",
      class: "op-toggle",
      "aria-expanded": String(open),
      "aria-label": `${open ? "Hide" : "Show"} the call stacks and kernels of ${r.name}`,
    });
    toggle.onclick = (ev) => {
      ev.stopPropagation();
      this.toggle(r);
    };
    row.cells[0].prepend(toggle);
    row.onclick = (ev) => {
      if ((ev.target as HTMLElement).closest("a, button, input, select")) return;
      if (window.getSelection()?.toString()) return; // selecting text is not a click
      this.toggle(r);
    };
    return open ? this.detailRow(r) : null;
  }
}

export const operatorsView: ViewDef = {
  id: "operators",
  title: "Operators",
  mount(host) {
    void new OperatorsPanel(host).load();
  },
};
