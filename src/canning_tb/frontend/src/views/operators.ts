// Operators view: one table of the window's operators (from the digest's ops_by_name /
// ops_by_shape / ops_by_stack), sortable, searchable, with a chart of the top N and CSV export.
// The server searches, sorts and pages the rows (a trace can hold 200,000 operator names): the
// table shows one page, the chart asks the top N, the CSV is the server's download of every row.
import { getJSON, windowParams, type GroupBy, type OperatorDetailResponse, type OperatorsResponse, type OpStat } from "../api";
import { Chart, type Item } from "../chart";
import { clear, h, option } from "../dom";
import { int, pct, shortFrame, shortStack, us } from "../format";
import { tip } from "../glossary";
import type { OperatorsOptions } from "../state";
import { errorText, fetchOr, problemsList, SortTable, type Col } from "./common";
import { Pager } from "./pager";
import { timelineLink } from "./timeline_link";
import { anyWork, workColumns } from "./work_columns";
import { showLoading, type ViewDef, type ViewHost } from "./view";

type OpRow = OpStat;
type StackRow = OperatorDetailResponse["stacks"][number];
type Key =
  | "name"
  | "input_shapes"
  | "call_stack"
  | "calls"
  | "host_self_ns"
  | "host_total_ns"
  | "device_self_ns"
  | "device_total_ns"
  | "tc_eligible"
  | "tc_self_share"
  | "tc_total_share";

type Column = Col<OpRow> & { key: Key; fmt: (r: OpRow) => string };
/** a column of the table: the time / call columns above, or the work columns (views/work_columns.ts) */
type TableColumn = Col<OpRow> & { fmt: (r: OpRow) => string };

function col(key: Key, label: string, tip: string, fmt: (r: OpRow) => string, num = true): Column {
  // the name cell is class "name" (it holds the row's toggle); other text cells "text"
  const value = (r: OpRow) => (typeof r[key] === "boolean" ? (r[key] ? "Yes" : "No") : (r[key] as number | string | null) ?? -1);
  return { key, label, tip, fmt, num, value, cls: key === "name" ? "name" : undefined };
}

/** Tensor Core share columns (GPU): a share 0..1 shown in %, -1 unknown. */
function tcShare(key: "tc_self_share" | "tc_total_share", label: string, tip: string): Column {
  return { ...col(key, label, tip, (r) => pct(r[key] ?? -1)), value: (r) => r[key] ?? -1 };
}

const COLUMNS: Record<Key, Column> = {
  name: col("name", "Name", "Operator name", (r) => r.name, false),
  input_shapes: col("input_shapes", "Input Shapes", "Shapes of the inputs (record_shapes=True)", (r) => r.input_shapes, false),
  call_stack: { ...col("call_stack", "Call Stack", "Python call stack (with_stack=True); package paths shortened, the whole stack on hover", (r) => shortStack(r.call_stack), false), title: (r) => r.call_stack },
  calls: col("calls", "Calls", "Number of calls in the window", (r) => int(r.calls)),
  host_self_ns: col("host_self_ns", "Host Self (µs)", tip("host_self"), (r) => us(r.host_self_ns)),
  host_total_ns: col("host_total_ns", "Host Total (µs)", tip("host_total"), (r) => us(r.host_total_ns)),
  device_self_ns: col("device_self_ns", "Device Self (µs)", tip("device_self"), (r) => us(r.device_self_ns)),
  device_total_ns: col("device_total_ns", "Device Total (µs)", tip("device_total"), (r) => us(r.device_total_ns)),
  tc_eligible: col("tc_eligible", "Tensor Cores Eligible", tip("tc_eligible"), (r) => (r.tc_eligible ? "Yes" : "No"), false),
  tc_self_share: tcShare("tc_self_share", "Tensor Cores Self (%)", tip("tc_self_share")),
  tc_total_share: tcShare("tc_total_share", "Tensor Cores Total (%)", tip("tc_total_share")),
};

const GROUP_LABELS: Record<GroupBy, string> = { name: "Operator", shape: "Operator + input shapes", stack: "Operator + call stack" };
const PAGE_ROWS = 200;
const SEARCH_DELAY_MS = 200;

function columnsFor(data: OperatorsResponse): TableColumn[] {
  const cols: TableColumn[] = [COLUMNS.name];
  if (data.group_by === "shape") cols.push(COLUMNS.input_shapes);
  if (data.group_by === "stack") cols.push(COLUMNS.call_stack);
  cols.push(COLUMNS.calls, COLUMNS.host_self_ns, COLUMNS.host_total_ns);
  if (data.has_device) cols.push(COLUMNS.device_self_ns, COLUMNS.device_total_ns);
  if (data.rows.some((r) => (r.tc_total_share ?? -1) >= 0)) cols.push(COLUMNS.tc_eligible, COLUMNS.tc_self_share, COLUMNS.tc_total_share);
  // FLOPs and rates against the roofs (analysis/efficiency), where some operator has a model
  if (anyWork(data.rows, (r) => r.work)) cols.push(...(workColumns<OpRow>((r) => r.work, "work.", true) as TableColumn[]));
  return cols;
}

class OperatorsPanel {
  private data!: OperatorsResponse;
  private cols: TableColumn[] = [];
  private chart: Chart | null = null;
  private table = new SortTable<OpRow>("op-table", [], "", true, "", PAGE_ROWS, {
    serverSorted: true,
    decorateRow: (r, tr) => this.decorateRow(r, tr),
    onSort: () => {
      this.setOpts({ sort: this.table.sortKey, desc: this.table.desc });
      void this.fetchPage(0);
      void this.fetchChart();
    },
  });
  private pager = new Pager("op-pager", (offset) => void this.fetchPage(offset));
  private count = h("span", { id: "op-count", class: "muted" });
  private chartTitle = h("h3", { id: "op-chart-title", class: "section-title" });
  private chartEl = h("div", { id: "op-chart", class: "chart" });
  private groupSel = h("select", { id: "op-group", "aria-label": "Group by" });
  /** rows shown expanded (by rowKey): survives re-sorting, searching and regrouping back */
  private expanded = new Set<string>();
  private details = new Map<string, Promise<OperatorDetailResponse>>();
  /** the latest page and chart asked: an older answer arriving late is dropped */
  private asked = { page: 0, chart: 0 };
  private searchTimer = 0;

  constructor(private host: ViewHost) {
    host.signal.addEventListener("abort", () => this.chart?.dispose());
  }

  private get opts(): OperatorsOptions {
    return this.host.store.state.operators;
  }

  private setOpts(patch: Partial<OperatorsOptions>): void {
    this.host.store.operators(patch);
  }

  /** The table's query: group, search and sort as the options say (the server's page parameters). */
  private query(extra: Record<string, string> = {}): Record<string, string> {
    const params: Record<string, string> = { ...windowParams(this.host.sel), group_by: this.opts.group, search: this.opts.search.trim() };
    if (this.opts.sort) Object.assign(params, { sort: this.opts.sort, order: this.opts.desc ? "desc" : "asc" });
    return { ...params, ...extra };
  }

  async load(): Promise<void> {
    const host = this.host;
    showLoading(host, "Computing the operator statistics of this window… (the first open of a big trace takes a while)");
    const data = await fetchOr<OperatorsResponse>(host, "operators", this.query({ limit: String(PAGE_ROWS) }));
    if (!data) return;
    this.data = data;
    this.build();
  }

  private build(): void {
    const host = this.host;
    const data = this.data;
    this.cols = columnsFor(data);
    const asked = this.opts.sort;
    if (!this.opts.sort || !this.cols.some((c) => c.key === this.opts.sort)) this.setOpts({ sort: data.has_device ? "device_self_ns" : "host_self_ns", desc: true });
    this.table.sortKey = this.opts.sort;
    this.table.desc = this.opts.desc;
    this.table.setColumns(this.cols);
    clear(host.el);
    this.chartEl = h("div", { id: "op-chart", class: "chart" });
    const tableHead = h("div", { class: "table-head" }, h("h3", { class: "section-title", text: "Operators" }), this.count);
    host.el.append(
      this.toolbar(),
      problemsList(data.problems, "op-problems") ?? "",
      h("section", { class: "card" }, this.chartTitle, this.chartEl),
      h("section", { class: "card" }, tableHead, h("div", { class: "table-wrap" }, this.table.el), this.pager.el),
    );
    this.chart?.dispose();
    this.chart = new Chart(this.chartEl);
    if (asked === this.opts.sort) this.show(data);
    else void this.fetchPage(0); // the first answer came in the digest's order
    void this.fetchChart();
    host.setState("loaded");
  }

  /** Asks one page of the rows as the options say, and shows it. */
  private async fetchPage(offset: number): Promise<void> {
    const ticket = ++this.asked.page;
    try {
      const data = await getJSON<OperatorsResponse>("operators", this.query({ offset: String(offset), limit: String(PAGE_ROWS) }), this.host.signal);
      if (ticket === this.asked.page && !this.host.signal.aborted) this.show(data);
    } catch (err) {
      if (!this.host.signal.aborted && (err as Error).name !== "AbortError") this.count.textContent = `Cannot load the operators: ${errorText(err)}`;
    }
  }

  /** The page on screen: the rows in the server's order, the pager and the count. */
  private show(data: OperatorsResponse): void {
    this.data = data;
    this.table.setRows(data.rows, data.all_rows ? "No operator matches the search." : "This window has no operators.");
    this.pager.show(data.offset, data.limit, data.total, data.rows.length);
    this.count.textContent =
      data.total === data.all_rows ? `${int(data.all_rows)} operators` : `${int(data.total)} of ${int(data.all_rows)} operators match “${data.search}”`;
  }

  private toolbar(): HTMLElement {
    const opts = this.opts;
    clear(this.groupSel);
    const groups: GroupBy[] = this.data.has_stacks || opts.group === "stack" ? ["name", "shape", "stack"] : ["name", "shape"];
    for (const group of groups) this.groupSel.append(option(group, GROUP_LABELS[group], group === opts.group));
    this.groupSel.onchange = () => {
      this.setOpts({ group: this.groupSel.value as GroupBy });
      void this.load();
    };
    const search = h("input", { id: "op-search", type: "search", placeholder: "Search operators by name", "aria-label": "Search operators by name" });
    search.value = opts.search;
    search.oninput = () => {
      this.setOpts({ search: search.value });
      // the page on screen narrows at once; the server's answer (every page) follows
      const query = search.value.trim().toLowerCase();
      this.table.setRows(this.data.rows.filter((row) => row.name.toLowerCase().includes(query)), "No operator matches the search.");
      window.clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => {
        void this.fetchPage(0);
        void this.fetchChart();
      }, SEARCH_DELAY_MS);
    };
    const topN = h("input", { id: "op-topn", type: "number", min: 1, max: 50, value: opts.top, "aria-label": "Top N" });
    topN.oninput = () => {
      const top = Math.round(Number(topN.value));
      if (!Number.isFinite(top) || top < 1) return;
      this.setOpts({ top: Math.min(50, top) });
      void this.fetchChart();
    };
    const chartSel = h("select", { id: "op-chart-type", "aria-label": "Chart type" });
    chartSel.append(option("bar", "Bar", opts.chart === "bar"), option("pie", "Pie", opts.chart === "pie"));
    chartSel.onchange = () => {
      this.setOpts({ chart: chartSel.value as OperatorsOptions["chart"] });
      void this.fetchChart();
    };
    const csv = h("a", { id: "op-csv", class: "button", title: "Download every operator that matches the search as CSV (times in ns)" }, "Download CSV");
    csv.onclick = () => {
      const sel = this.host.sel;
      csv.setAttribute("href", `./operators.csv?${new URLSearchParams(this.query()).toString()}`);
      csv.setAttribute("download", `operators-${sel.run}-${sel.worker}-${sel.window}-${this.opts.group}.csv`.replace(/[^A-Za-z0-9._-]+/g, "_"));
    };
    return h("div", { class: "toolbar" }, h("label", {}, "Group by ", this.groupSel), h("label", { class: "grow" }, search), h("label", {}, "Top ", topN), h("label", {}, "Chart ", chartSel), csv);
  }

  private metric(): Column {
    const sorted = COLUMNS[this.opts.sort as Key];
    if (sorted && sorted.num && !sorted.key.startsWith("tc_")) return sorted; // the chart shows times and calls
    return this.data.has_device ? COLUMNS.device_self_ns : COLUMNS.host_self_ns;
  }

  /** The top N by the chart's metric among the rows that match the search (asked to the server). */
  private async fetchChart(): Promise<void> {
    const ticket = ++this.asked.chart;
    const metric = this.metric();
    try {
      const top = await getJSON<OperatorsResponse>("operators", this.query({ sort: metric.key, order: "desc", limit: String(this.opts.top) }), this.host.signal);
      if (ticket === this.asked.chart && !this.host.signal.aborted) this.drawChart(top.rows);
    } catch (err) {
      if (!this.host.signal.aborted && (err as Error).name !== "AbortError") this.chartTitle.textContent = `Cannot load the chart: ${errorText(err)}`;
    }
  }

  private drawChart(rows: OpRow[]): void {
    if (!this.chart) return;
    const metric = this.metric();
    const top = rows.filter((row) => (row[metric.key] as number) > 0);
    const items: Item[] = top.map((row) => ({
      label: this.data.group_by === "shape" && row.input_shapes ? `${row.name} ${row.input_shapes}` : row.name,
      value: metric.key === "calls" ? row.calls : (row[metric.key] as number) / 1000,
      text: metric.fmt(row),
    }));
    this.chartTitle.textContent = `Top ${this.opts.top} operators by ${metric.label}`;
    this.chartEl.dataset.items = String(items.length);
    this.chart.show(this.opts.chart, items, metric.label);
  }

  private rowKey(op: OpRow): string {
    return `${this.data.group_by}\u0001${op.name}\u0001${op.input_shapes}\u0001${op.call_stack}`;
  }

  private toggle(op: OpRow): void {
    const key = this.rowKey(op);
    if (this.expanded.has(key)) this.expanded.delete(key);
    else this.expanded.add(key);
    this.table.render();
  }

  private detail(op: OpRow): Promise<OperatorDetailResponse> {
    const shaped = this.data.group_by === "shape";
    const key = `${op.name}\u0001${shaped ? op.input_shapes : ""}`;
    let pending = this.details.get(key);
    if (!pending) {
      const params: Record<string, string> = { ...windowParams(this.host.sel), detail: op.name };
      if (shaped) params.shapes = op.input_shapes;
      pending = getJSON<OperatorDetailResponse>("operators", params, this.host.signal);
      pending.catch(() => this.details.delete(key));
      this.details.set(key, pending);
    }
    return pending;
  }

  private detailRow(op: OpRow): HTMLTableRowElement {
    const body = h("div", { class: "op-detail-body", "data-state": "loading" }, h("span", { class: "spinner" }), "Loading the call stacks and kernels…");
    const tr = h("tr", { class: "op-detail", "data-op": op.name }, h("td", { colspan: this.cols.length }, body));
    this.detail(op).then(
      (detail) => {
        if (this.host.signal.aborted) return;
        body.replaceChildren(...this.detailContent(op, detail));
        body.dataset.state = "loaded";
      },
      (err) => {
        if (this.host.signal.aborted || (err as Error).name === "AbortError") return;
        body.replaceChildren(h("span", { class: "error-text", text: `Cannot load the details: ${errorText(err)}` }));
        body.dataset.state = "error";
      },
    );
    return tr;
  }

  private stacksTable(detail: OperatorDetailResponse): HTMLTableElement {
    const hasDevice = this.data.has_device;
    const stackCols: [string, (row: StackRow) => string][] = [
      ["Calls", (row) => int(row.calls)],
      ["Host Self (µs)", (row) => us(row.host_self_ns)],
      ["Host Total (µs)", (row) => us(row.host_total_ns)],
    ];
    if (hasDevice) stackCols.push(["Device Self (µs)", (row) => us(row.device_self_ns)], ["Device Total (µs)", (row) => us(row.device_total_ns)]);
    const table = h("table", { class: "data-table op-stacks" });
    table.append(h("thead", {}, h("tr", {}, ...stackCols.map(([label]) => h("th", { class: "num", text: label })), h("th", { text: "Call stack (innermost first)" }))));
    const body = h("tbody");
    const order = (a: StackRow, b: StackRow) => (hasDevice ? b.device_total_ns - a.device_total_ns : 0) || b.host_total_ns - a.host_total_ns;
    for (const stack of detail.stacks.slice().sort(order)) {
      const frames = stack.call_stack.split(";").filter((frame) => frame.trim() !== "");
      body.append(
        h(
          "tr",
          {},
          ...stackCols.map(([, fmt]) => h("td", { class: "num", text: fmt(stack) })),
          h("td", { class: "stack" }, ...frames.map((frame) => h("div", { class: "frame", text: shortFrame(frame), title: frame }))),
        ),
      );
    }
    if (!detail.stacks.length)
      body.append(h("tr", { class: "no-rows" }, h("td", { colspan: stackCols.length + 1, text: "No call stack recorded for this operator (profile with with_stack=True)." })));
    table.append(body);
    return table;
  }

  private kernelsTable(detail: OperatorDetailResponse): HTMLTableElement {
    const table = h("table", { class: "data-table op-kernels" });
    table.append(h("thead", {}, h("tr", {}, h("th", { text: "Kernel" }), h("th", { class: "num", text: "Calls" }), h("th", { class: "num", text: "Total (µs)" }))));
    const body = h("tbody");
    for (const kernel of detail.kernels)
      body.append(h("tr", {}, h("td", { class: "kname", text: kernel.name, title: kernel.name }), h("td", { class: "num", text: int(kernel.calls) }), h("td", { class: "num", text: us(kernel.total_ns) })));
    if (!detail.kernels.length) body.append(h("tr", { class: "no-rows" }, h("td", { colspan: 3, text: "This operator launched no kernel itself (its children may have)." })));
    table.append(body);
    return table;
  }

  private detailContent(op: OpRow, detail: OperatorDetailResponse): HTMLElement[] {
    const note =
      this.data.group_by === "shape" && !detail.stacks_by_shape
        ? h("p", { class: "muted", text: `Call stacks of every ${op.name} call: the profile groups stacks by operator name only, not by input shapes.` })
        : null;
    const wrap = (el: HTMLElement) => h("div", { class: "table-wrap short" }, el);
    return [
      h(
        "div",
        { class: "op-detail-grid" },
        h("section", {}, h("h4", { text: `Call stacks (${int(detail.stacks.length)})` }), ...(note ? [note] : []), wrap(this.stacksTable(detail))),
        h("section", {}, h("h4", { text: `Kernels launched (${int(detail.kernels.length)})` }), wrap(this.kernelsTable(detail))),
      ),
      timelineLink(this.host.store, op.name, "op-timeline-link"),
    ];
  }

  /** Makes a row open and close its details; returns the details row when it is open. */
  private decorateRow(op: OpRow, row: HTMLTableRowElement): HTMLTableRowElement | null {
    const open = this.expanded.has(this.rowKey(op));
    row.className = `op-row${open ? " open" : ""}`;
    row.setAttribute("aria-expanded", String(open));
    // the arrow is drawn by CSS, so the name cell's text stays the operator's name
    const toggle = h("button", {
      type: "button",
      class: "op-toggle",
      "aria-expanded": String(open),
      "aria-label": `${open ? "Hide" : "Show"} the call stacks and kernels of ${op.name}`,
    });
    toggle.onclick = (ev) => {
      ev.stopPropagation();
      this.toggle(op);
    };
    row.cells[0].prepend(toggle);
    row.onclick = (ev) => {
      if ((ev.target as HTMLElement).closest("a, button, input, select")) return;
      if (window.getSelection()?.toString()) return; // selecting text is not a click
      this.toggle(op);
    };
    return open ? this.detailRow(op) : null;
  }
}

export const operatorsView: ViewDef = {
  id: "operators",
  title: "Operators",
  mount(host) {
    void new OperatorsPanel(host).load();
  },
};
