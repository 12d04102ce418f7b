// Pieces shared by the Overview, Operators, Kernels, Memory and Communication views: a sortable table,
// CSV export, the problems list, key/value tables and the fetch-with-states wrapper.
import { ApiError, getJSON, type ClusterLoading, type ClusterResponse, type Problem } from "../api";
import { clear, h } from "../dom";
import { int } from "../format";
import type { AppStore } from "../state";
import { showError, type ViewHost } from "./view";

export interface Col<T> {
  key: string;
  label: string;
  num?: boolean;
  tip?: string;
  /** the value sorted on and written to CSV */
  value: (r: T) => number | string;
  /** the text shown (defaults to the value) */
  fmt?: (r: T) => string;
  /** the text on hover (defaults to the text shown, for text cells): the whole of a shortened text */
  title?: (r: T) => string;
  cls?: string;
}

/** Fetch a route; on failure show the error in the view and return null (also when aborted). */
export async function fetchOr<T>(host: ViewHost, route: string, params: Record<string, string>): Promise<T | null> {
  try {
    const data = await getJSON<T>(route, params, host.signal);
    return host.signal.aborted ? null : data;
  } catch (err) {
    if (host.signal.aborted || (err as Error).name === "AbortError") return null;
    showError(host, errorText(err));
    return null;
  }
}

export function errorText(err: unknown): string {
  return err instanceof ApiError ? err.message : String(err);
}

export function problemsList(problems: Problem[], id: string): HTMLElement | null {
  if (!problems.length) return null;
  return h("ul", { class: "problems", id }, ...problems.map((p) => h("li", { class: p.severity, text: `${p.file ? `${p.file}: ` : ""}${p.message}` })));
}

/** A titled card; a table put straight in it is wrapped so that its columns scroll inside the card. */
export function card(title: string, ...children: (Node | string | null)[]): HTMLElement {
  const wrapped = children.map((c) => (c instanceof HTMLTableElement ? h("div", { class: "table-wrap" }, c) : c));
  return h("section", { class: "card" }, h("h3", { class: "section-title", text: title }), ...wrapped.filter((c): c is Node | string => c !== null));
}

/** What a colour means, under a table or chart that uses it: [CSS class of the swatch, text]. */
export function legend(id: string, entries: [string, string][]): HTMLElement {
  return h("p", { id, class: "legend" }, ...entries.map(([cls, text]) => h("span", { class: "legend-entry" }, h("span", { class: `swatch ${cls}` }), text)));
}

/** Selects another worker (rank) of the run, at the window of the same position (a row of a
 * table across ranks links to that rank). */
export function openRank(host: ViewHost, worker: string, windowIndex: number): void {
  const entry = host.run?.workers.find((w) => w.name === worker);
  if (!entry) return;
  const win = entry.windows[windowIndex] ?? entry.windows[0];
  host.store.update({ worker, window: win?.id ?? "" });
}

/** A two-column table of label / value pairs. */
export function kvTable(id: string, rows: [string, string, string?][], head: [string, string] = ["Metric", "Value"]): HTMLTableElement {
  const table = h("table", { id, class: "data-table kv" });
  table.append(h("thead", {}, h("tr", {}, h("th", { text: head[0] }), h("th", { class: "num", text: head[1] }))));
  const body = h("tbody");
  for (const [k, v, tip] of rows) {
    const tr = h("tr", {}, h("th", { scope: "row", text: k, title: tip }), h("td", { class: "num", text: v }));
    body.append(tr);
  }
  table.append(body);
  return table;
}

/** A CSV cell; text a spreadsheet would run as a formula (=, +, -, @, tab, CR first) gets a ' in front
 * (OWASP, CSV injection: as the server's downloads, canning_tb/util/csv_cells.py). */
function csvCell(value: string | number): string {
  const text = typeof value === "string" && /^[=+\-@\t\r]/.test(value) ? `'${value}` : String(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function downloadCSV(name: string, head: string[], rows: (string | number)[][]): void {
  const text = [head, ...rows].map((r) => r.map(csvCell).join(",")).join("\r\n") + "\r\n";
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const link = h("a", { href: url, download: name, style: "display:none" });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 60);
}

/** Optional extras for a SortTable whose rows do more than show their cells (Operators). */
export interface SortTableHooks<T> {
  /** orders the rows the sort column finds equal (default: they keep their order) */
  tieBreak?: (a: T, b: T) => number;
  /** called on each row drawn; may return a row to draw under it (an expanded row's details) */
  decorateRow?: (r: T, tr: HTMLTableRowElement) => HTMLTableRowElement | null;
  /** called after a header click has re-sorted and redrawn the table */
  onSort?: () => void;
  /** ends "Showing the first N of M rows" (default ".") */
  moreText?: string;
  /** the rows come sorted (and paged) by the server: a header click only asks (onSort) */
  serverSorted?: boolean;
}

// Every table's sort is kept in the app state under the table's id (so in the URL), unless its view
// keeps it itself (hooks.onSort). The shell binds the store once.
let sortStore: AppStore | null = null;

export function bindTableSorts(store: AppStore): void {
  sortStore = store;
}

/** A header that may wrap inside a name as well (PMU ratios: aiv_icache_miss_rate): a zero-width
 * space after each _, where a word wraps otherwise not. */
function breakable(label: string): string {
  return label.replace(/_(?=\S)/g, "_\u200b");
}

/** Whether a text column's cells are all short (Yes / No, a status): it keeps its width, while the
 * columns of long text share what the numbers leave of the card (style.css). */
function shortText(texts: string[]): boolean {
  return texts.every((text) => text.length <= 16);
}

/** A table sorted by clicking its headers; shows at most `max` rows. */
export class SortTable<T> {
  readonly el: HTMLTableElement;
  private rows: T[] = [];
  constructor(
    id: string,
    private cols: Col<T>[],
    public sortKey: string,
    public desc = true,
    private emptyText = "No rows.",
    private max = 2000,
    private hooks: SortTableHooks<T> = {},
  ) {
    this.el = h("table", { id, class: "data-table" });
    const saved = hooks.onSort ? "" : (sortStore?.state.sorts[id] ?? "");
    const key = saved.replace(/^-/, "");
    // a saved column the table does not have (a stale link) leaves the view's default
    if (saved && (!cols.length || cols.some((c) => c.key === key))) [this.sortKey, this.desc] = [key, saved.startsWith("-")];
  }

  setColumns(cols: Col<T>[]): void {
    this.cols = cols;
    if (!cols.some((c) => c.key === this.sortKey)) this.sortKey = cols[0].key;
  }

  setRows(rows: T[], emptyText?: string): void {
    this.rows = rows;
    if (emptyText !== undefined) this.emptyText = emptyText;
    this.render();
  }

  sorted(): T[] {
    if (this.hooks.serverSorted) return this.rows.slice();
    const col = this.cols.find((c) => c.key === this.sortKey) ?? this.cols[0];
    const dir = this.desc ? -1 : 1;
    const tie = this.hooks.tieBreak;
    return this.rows.slice().sort((a, b) => {
      const left = col.value(a);
      const right = col.value(b);
      const order = typeof left === "number" && typeof right === "number" ? left - right : String(left).localeCompare(String(right));
      return order !== 0 || !tie ? order * dir : tie(a, b);
    });
  }

  csv(): [string[], (string | number)[][]] {
    return [this.cols.map((c) => c.label), this.sorted().map((r) => this.cols.map((c) => c.value(r)))];
  }

  render(): void {
    const tr = h("tr");
    for (const c of this.cols) {
      const on = c.key === this.sortKey;
      const th = h(
        "th",
        {
          "data-key": c.key,
          class: `${c.num ? "num" : ""} sortable${on ? " sorted" : ""}`,
          title: `${c.tip ?? c.label}. Click to sort.`,
          "aria-sort": on ? (this.desc ? "descending" : "ascending") : "none",
          tabindex: 0,
        },
        breakable(c.label),
        h("span", { class: "sort-mark", text: on ? (this.desc ? " ▼" : " ▲") : "" }),
      );
      const sort = () => {
        if (this.sortKey === c.key) this.desc = !this.desc;
        else {
          this.sortKey = c.key;
          this.desc = !!c.num; // numbers: largest first; text: A-Z
        }
        this.render();
        if (this.hooks.onSort) this.hooks.onSort();
        else sortStore?.sort(this.el.id, `${this.desc ? "-" : ""}${this.sortKey}`);
      };
      th.onclick = sort;
      th.onkeydown = (ev) => {
        if (ev.key === "Enter" || ev.key === " ") {
          ev.preventDefault();
          sort();
        }
      };
      tr.append(th);
    }
    const body = h("tbody");
    const rows = this.sorted();
    const shown = rows.slice(0, this.max);
    const text = (c: Col<T>, r: T) => (c.fmt ? c.fmt(r) : String(c.value(r)));
    const classes = this.cols.map((c) => c.cls ?? (c.num ? "num" : shortText(shown.map((r) => text(c, r))) ? "text short" : "text"));
    for (const r of shown) {
      const row = h("tr");
      this.cols.forEach((c, i) => {
        const shownText = text(c, r);
        const td = h("td", { class: classes[i], text: shownText });
        if (c.title) td.title = c.title(r);
        else if (!c.num && td.dataset.unknown === undefined) td.title = shownText;
        row.append(td);
      });
      body.append(row);
      const extra = this.hooks.decorateRow?.(r, row);
      if (extra) body.append(extra);
    }
    if (!rows.length) body.append(h("tr", { class: "no-rows" }, h("td", { colspan: this.cols.length, text: this.emptyText })));
    else if (rows.length > this.max)
      body.append(
        h("tr", { class: "no-rows" }, h("td", { colspan: this.cols.length, text: `Showing the first ${int(this.max)} of ${int(rows.length)} rows${this.hooks.moreText ?? "."}` })),
      );
    clear(this.el);
    this.el.append(h("thead", {}, tr), body);
  }
}

export function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = window.setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      window.clearTimeout(timer);
      reject(new DOMException("aborted", "AbortError"));
    });
  });
}

/** GET /cluster, polling while it answers 202 {loading, done, total}; calls onProgress on each. */
export async function pollCluster(
  params: Record<string, string>,
  signal: AbortSignal,
  onProgress: (done: number, total: number) => void,
): Promise<ClusterResponse> {
  for (;;) {
    const body = await getJSON<ClusterResponse | ClusterLoading>("cluster", params, signal);
    if (!("loading" in body && body.loading)) return body as ClusterResponse;
    onProgress(body.done, body.total);
    await delay(500, signal);
  }
}

/** "Analysing ranks: 3/8" with a progress bar; update() moves it. */
export function rankProgress(id: string): { el: HTMLElement; update: (done: number, total: number) => void } {
  const text = h("span", { class: "progress-text", text: "Analysing ranks…" });
  const bar = h("progress", { max: 1, value: 0 });
  const el = h("div", { id, class: "notice progress", role: "status" }, h("span", { class: "spinner" }), text, bar);
  return {
    el,
    update(done: number, total: number) {
      text.textContent = `Analysing ranks: ${done}/${total}`;
      bar.max = Math.max(1, total);
      bar.value = done;
      el.dataset.done = String(done);
      el.dataset.total = String(total);
    },
  };
}
