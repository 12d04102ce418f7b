// Compare: the selected window (the target) against a baseline picked here among every window of the
// logdir (another window of the run, another rank, another run). Shows GET /compare: the verdict
// line, the step breakdown side by side, the contributors to the step-time change, the operator /
// kernel / kernel-family delta table (searched, sorted and paged by the server: a window of 200,000
// operator names answers one page), the operator tree diff, the memory overlay and the communication
// deltas. The baseline and the table's options live in the app state. Without a baseline in the state the
// server's default pairing chooses it (queries/pairing.py, the CLI's and the MCP tool's too) and says why.
import { getJSON, windowParams, type Attribution, type CompareResponse, type CompareRow, type GroupBy, type RunEntry, type RunsResponse, type Selection } from "../api";
import { h, option } from "../dom";
import { calls, int, ms } from "../format";
import type { CompareOptions } from "../state";
import { card, errorText, SortTable, type Col } from "./common";
import { Pager } from "./pager";
import { breakdownChart, codeItemsTable, commTable, contributorsTable, deltaMs, deltaPct, memoryChart, memoryPeaks, statusMark, treeDiff } from "./compare_parts";
import { showError, showLoading, type ViewDef, type ViewHost } from "./view";

type Table = CompareOptions["table"];
const TABLES: [Table, string][] = [
  ["operators", "Operators"],
  ["kernels", "Kernels"],
  ["families", "Kernel families"],
];

function columns(group: GroupBy, operators: boolean): Col<CompareRow>[] {
  const extra: Col<CompareRow>[] = [];
  if (operators && group === "shape") extra.push({ key: "input_shapes", label: "Input shapes", value: (r) => r.input_shapes, tip: "Input shapes the operator was matched with" });
  if (operators && group === "stack") extra.push({ key: "call_stack", label: "Call stack", value: (r) => r.call_stack, tip: "Call stack the operator was matched with (innermost frame first, without line numbers)" });
  return [
    { key: "key", label: "Name", value: (r) => r.key, cls: "name", tip: "Matched name (the name map's canonical name)" },
    ...extra,
    { key: "status", label: "", value: (r) => statusMark(r.status), tip: "added: only in the target; removed: only in the baseline" },
    { key: "base_calls", label: "Calls (base)", num: true, value: (r) => r.base_calls, fmt: (r) => calls(r.base_calls), tip: "Calls per step in the baseline" },
    { key: "target_calls", label: "Calls (target)", num: true, value: (r) => r.target_calls, fmt: (r) => calls(r.target_calls), tip: "Calls per step in the target" },
    { key: "base_ns", label: "Base (ms)", num: true, value: (r) => r.base_ns / 1e6, fmt: (r) => ms(r.base_ns), tip: "Time per step in the baseline" },
    { key: "target_ns", label: "Target (ms)", num: true, value: (r) => r.target_ns / 1e6, fmt: (r) => ms(r.target_ns), tip: "Time per step in the target" },
    { key: "delta_ns", label: "Δ (ms)", num: true, value: (r) => r.delta_ns / 1e6, fmt: (r) => deltaMs(r.delta_ns), tip: "Target minus baseline, per step" },
    { key: "abs_delta", label: "|Δ| (ms)", num: true, value: (r) => Math.abs(r.delta_ns) / 1e6, fmt: (r) => ms(Math.abs(r.delta_ns)), tip: "Size of the change" },
    { key: "delta_pct", label: "Δ %", num: true, value: (r) => r.delta_pct ?? 0, fmt: (r) => deltaPct(r.delta_pct, r.delta_text), tip: "Change in % of the baseline; “new” / “gone” where the operator appears / disappears (no call on one side)" },
  ];
}

const PAGE_ROWS = 200;
const SEARCH_DELAY_MS = 200;

function emptyText(table: Table, mode: GroupBy): string {
  if (table !== "operators") return "Neither window recorded device kernels.";
  if (mode === "stack") return "Neither window recorded call stacks (profile with with_stack=True).";
  if (mode === "shape") return "Neither window recorded input shapes (profile with record_shapes=True).";
  return "Neither window recorded operators.";
}

function windowsOf(runs: RunEntry[]): Selection[] {
  return runs.flatMap((r) => r.workers.flatMap((w) => w.windows.map((win) => ({ run: r.name, worker: w.name, window: win.id }))));
}

function same(a: Selection, b: Selection): boolean {
  return a.run === b.run && a.worker === b.worker && a.window === b.window;
}

/** The baseline the state names, when it is a window of the logdir; null: the server's default pairing. */
export function chosenBaseline(opts: CompareOptions, runs: RunEntry[]): Selection | null {
  const chosen = { run: opts.run, worker: opts.worker, window: opts.window };
  return windowsOf(runs).some((w) => same(w, chosen)) ? chosen : null;
}

/** How the answer's baseline was chosen: the server's words for a default pairing (a triggered window's is
 * `cmp-trigger-note`, with the trigger's reason). */
function pairingNote(d: CompareResponse): HTMLElement | null {
  if (!d.pairing.default) return null;
  const id = d.pairing.rule === "triggered" ? "cmp-trigger-note" : "cmp-pairing";
  return h("p", { id, class: "muted", "data-rule": d.pairing.rule, text: `Default pairing: ${d.pairing.text} (pick another baseline above).` });
}

/** The machine's and the code's part of the step-time change, in ms per step. */
function attributionText(a: Attribution): string {
  const machine = a.machine_ns === null || a.factor === null
    ? "machine: unknown (no operator ran on both sides with the same calls and shapes)"
    : `machine ${deltaMs(a.machine_ns)} ms (common factor ${a.factor.toFixed(3)}, quartiles ${(a.factor_low ?? 0).toFixed(3)}–${(a.factor_high ?? 0).toFixed(3)} over ${int(a.matched_operators)} operators)`;
  const interval = a.code_interval ? ` (95 % interval ${deltaMs(a.code_interval.low_ns)} to ${deltaMs(a.code_interval.high_ns)})` : "";
  return `Step-time change per step: ${machine}; code ${deltaMs(a.code_ns)} ms${interval}.`;
}

function sideLabel(sel: Selection, label: string): string {
  return `${sel.run === "." ? "" : `${sel.run} / `}${sel.worker} / ${label}`;
}

/** The baseline's run / worker / window selectors and the Swap button. */
function picker(host: ViewHost, runs: RunEntry[], base: Selection): HTMLElement {
  const store = host.store;
  const runSel = h("select", { id: "cmp-base-run", "aria-label": "Baseline run" });
  const workerSel = h("select", { id: "cmp-base-worker", "aria-label": "Baseline worker" });
  const windowSel = h("select", { id: "cmp-base-window", "aria-label": "Baseline window" });
  const run = runs.find((r) => r.name === base.run);
  const worker = run?.workers.find((w) => w.name === base.worker);
  for (const r of runs) runSel.append(option(r.name, r.name === "." ? ". (logdir)" : r.name, r.name === base.run));
  for (const w of run?.workers ?? []) workerSel.append(option(w.name, w.name, w.name === base.worker));
  for (const win of worker?.windows ?? []) windowSel.append(option(win.id, win.label, win.id === base.window));
  const pick = (patch: Partial<CompareOptions>) => {
    store.compare(patch);
    void load(host);
  };
  // another run or worker: its first window
  runSel.onchange = () => {
    const first = runs.find((r) => r.name === runSel.value)?.workers[0];
    pick({ run: runSel.value, worker: first?.name ?? "", window: first?.windows[0]?.id ?? "" });
  };
  // the whole side is written: a default baseline (the view's choice) is not in the state, so a window alone
  // would name no window and the default would come back
  workerSel.onchange = () => pick({ run: base.run, worker: workerSel.value,
    window: run?.workers.find((w) => w.name === workerSel.value)?.windows[0]?.id ?? "" });
  windowSel.onchange = () => pick({ run: base.run, worker: base.worker, window: windowSel.value });
  const swap = h("button", { id: "cmp-swap", type: "button", class: "button", title: "Make the baseline the selected window, and the selected window the baseline" }, "Swap");
  const target = host.sel;
  swap.onclick = () => store.update({ ...base, compare: { ...store.state.compare, ...target } });
  return h("div", { class: "toolbar", id: "cmp-picker" }, h("strong", { text: "Baseline:" }), runSel, workerSel, windowSel, swap);
}

class ComparePanel {
  private table = new SortTable<CompareRow>("cmp-table", columns("name", true), "abs_delta", true, "No row matches the search.", PAGE_ROWS, {
    serverSorted: true,
    onSort: () => void this.fetchPage(0),
  });
  private pager = new Pager("cmp-pager", (offset) => void this.fetchPage(offset));
  private count = h("span", { id: "cmp-count", class: "muted" });
  private asked = 0;
  private searchTimer = 0;

  constructor(
    private host: ViewHost,
    private head: HTMLElement,
    private base: Selection,
    private data: CompareResponse,
  ) {}

  private verdict(): HTMLElement {
    const d = this.data;
    const step = d.verdict.step_time;
    const el = h(
      "div",
      { id: "cmp-verdict", class: "card verdict", "data-step-text": step.text, "data-delta-pct": String(step.delta_pct ?? "") },
      h("h2", { text: d.verdict.text }),
      h("p", { id: "cmp-attribution", "data-machine-ns": String(d.attribution.machine_ns ?? ""), "data-code-ns": String(d.attribution.code_ns), text: attributionText(d.attribution) }),
      h("p", { class: "muted", text: `Baseline: ${sideLabel(this.base, d.base_window.label)} (${d.base_window.format}, ${int(d.base.steps)} steps, ${ms(d.base.step_ns)} ms/step)` }),
      h("p", { class: "muted", text: `Target: ${sideLabel(this.host.sel, d.target_window.label)} (${d.target_window.format}, ${int(d.target.steps)} steps, ${ms(d.target.step_ns)} ms/step)` }),
    );
    const note = pairingNote(d);
    if (note) el.append(note);
    if (d.name_map.problem) el.append(h("p", { class: "error-text", id: "cmp-name-map-problem", text: `Name map ${d.name_map.file} not used: ${d.name_map.problem}` }));
    return el;
  }

  private options(): CompareOptions {
    return this.host.store.state.compare;
  }

  private tableToolbar(): HTMLElement {
    const store = this.host.store;
    const opts = this.options();
    const kind = h("select", { id: "cmp-table-kind", "aria-label": "Table" });
    for (const [value, label] of TABLES) kind.append(option(value, label, value === opts.table));
    kind.onchange = () => {
      store.compare({ table: kind.value as Table });
      this.refresh();
    };
    const group = h("select", { id: "cmp-group", "aria-label": "Match operators by" });
    for (const [value, label] of [["name", "name"], ["shape", "name + input shapes"], ["stack", "name + call stack"]])
      group.append(option(value, label, value === opts.group));
    group.onchange = () => {
      store.compare({ group: group.value as GroupBy });
      void load(this.host);
    };
    const search = h("input", { id: "cmp-search", type: "search", placeholder: "Search by name", "aria-label": "Search by name" });
    search.value = opts.search;
    search.oninput = () => {
      store.compare({ search: search.value });
      window.clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => this.refresh(), SEARCH_DELAY_MS);
    };
    return h("div", { class: "toolbar" }, kind, h("label", {}, "Match operators by ", group), h("label", { class: "grow" }, search));
  }

  /** Asks one page of the table as the options say (the server searches, sorts and cuts). */
  private async fetchPage(offset: number): Promise<void> {
    const ticket = ++this.asked;
    try {
      const query = { ...compareParams(this.host, this.base), offset: String(offset), sort: this.table.sortKey, order: this.table.desc ? "desc" : "asc" };
      const data = await getJSON<CompareResponse>("compare", query, this.host.signal);
      if (ticket === this.asked && !this.host.signal.aborted) this.showPage(data);
    } catch (err) {
      if (!this.host.signal.aborted && (err as Error).name !== "AbortError") this.count.textContent = `Cannot load the rows: ${errorText(err)}`;
    }
  }

  private refresh(): void {
    void this.fetchPage(0);
  }

  /** The page on screen: the rows in the server's order, the pager and the count. */
  private showPage(d: CompareResponse): void {
    const opts = this.options();
    this.table.setColumns(columns(d.mode, d.table === "operators"));
    this.table.setRows(d.rows, d.all_rows ? "No row matches the search." : emptyText(d.table, d.mode));
    this.table.el.dataset.table = d.table;
    this.pager.show(d.offset, d.limit, d.total, d.rows.length);
    this.count.textContent = d.total === d.all_rows ? `${int(d.all_rows)} rows` : `${int(d.total)} of ${int(d.all_rows)} rows match “${opts.search.trim()}”`;
  }

  show(): void {
    const d = this.data;
    const breakdownEl = h("div", { id: "cmp-breakdown-chart", class: "chart" });
    const memoryEl = h("div", { id: "cmp-memory-chart", class: "chart" });
    const pair = d.memory.find((m) => m.base_x.length || m.target_x.length);
    const time = d.metric === "device" ? "device self time where an operator ran device work, else host self time" : "host self time";
    this.host.el.replaceChildren(
      this.head,
      this.verdict(),
      h("div", { class: "grid2" }, card("Step breakdown (ms per step)", breakdownEl), card("Contributors to the step-time change", h("div", { class: "table-wrap" }, contributorsTable(d.contributors)))),
      card("The code's operators (time beyond the machine's common factor)", h("div", { class: "table-wrap" }, codeItemsTable(d.attribution.code_items))),
      this.tableToolbar(),
      h(
        "section",
        { class: "card" },
        h("div", { class: "table-head" }, h("h3", { class: "section-title", text: `Deltas per step (operators: ${time})` }), this.count),
        h("div", { class: "table-wrap" }, this.table.el),
        this.pager.el,
      ),
      card("Operator tree diff (call stacks, outermost first)", treeDiff(d)),
      h(
        "div",
        { class: "grid2" },
        card("Memory (allocated, step-aligned)", pair ? memoryEl : h("p", { class: "muted", text: "Neither window recorded memory." }), memoryPeaks(d.memory)),
        card("Communication per step", d.communication_by_kind.length ? commTable([...d.communication_by_kind, ...d.communication]) : h("p", { class: "muted", id: "cmp-no-comm", text: "Neither window recorded collectives." })),
      ),
    );
    this.showPage(d);
    breakdownChart(breakdownEl, d.breakdown, this.host.signal);
    if (pair) memoryChart(memoryEl, pair, this.host.signal);
    this.host.setState("loaded");
  }
}

/** The query of GET /compare: the two windows (no baseline: the server's default pairing), the matching, the
 * table and its search (first page). */
function compareParams(host: ViewHost, base: Selection | null): Record<string, string> {
  const opts = host.store.state.compare;
  return {
    base_run: base?.run ?? "",
    base_worker: base?.worker ?? "",
    base_window: base?.window ?? "",
    ...windowParams(host.sel),
    group_by: opts.group,
    table: opts.table,
    search: opts.search.trim(),
    limit: String(PAGE_ROWS),
  };
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Comparing the two windows…");
  let head: HTMLElement | null = null;
  let listing: RunsResponse | null = null;
  try {
    listing = await getJSON<RunsResponse>("runs", {}, host.signal);
    // a baseline the view's default chooses is not written into the state: only one the user picks is (state.ts)
    const chosen = chosenBaseline(host.store.state.compare, listing.runs);
    const data = await getJSON<CompareResponse>("compare", compareParams(host, chosen), host.signal);
    if (host.signal.aborted) return;
    const base = { run: data.base_window.run, worker: data.base_window.worker, window: data.base_window.window };
    head = picker(host, listing.runs, base);
    host.el.prepend(head);
    new ComparePanel(host, head, base, data).show();
  } catch (err) {
    if (host.signal.aborted || (err as Error).name === "AbortError") return;
    showError(host, errorText(err));
    // another baseline can still be picked
    if (listing) host.el.prepend(head ?? picker(host, listing.runs, chosenBaseline(host.store.state.compare, listing.runs) ?? host.sel));
  }
}

export const compareView: ViewDef = {
  id: "compare",
  title: "Compare",
  mount(host) {
    void load(host);
  },
};
