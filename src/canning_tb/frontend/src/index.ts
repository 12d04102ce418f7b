// Entry point: TensorBoard's plugin iframe runs `import("./index.js").then((m) => m.render())`.
// The shell: run / worker / window selectors, a tab per view, and the view area, all drawn from the
// app state (state.ts); the controls only ask the store for a new state. It polls /runs so runs and
// windows written while TensorBoard runs appear by themselves.
import css from "./style.css";
import { getJSON, type RunEntry, type RunsResponse, type Selection, type WorkerEntry } from "./api";
import { clear, h, option } from "./dom";
import { AppStore, readURL, type AppState } from "./state";
import { errorText } from "./views/common";
import { VIEWS } from "./views/index";
import { showEmpty, type ViewState } from "./views/view";

const POLL_LOADING_MS = 1500;
const POLL_MS = 10_000;

function workerLabel(worker: WorkerEntry): string {
  return worker.rank >= 0 && !worker.name.includes(String(worker.rank)) ? `rank ${worker.rank} · ${worker.name}` : worker.name;
}

function sameSelection(a: AppState, b: AppState): boolean {
  return a.run === b.run && a.worker === b.worker && a.window === b.window;
}

/** The names the selection falls back to when the state's are not (or no longer) listed. */
function validSelection(state: AppState, runs: RunEntry[]): Pick<AppState, "run" | "worker" | "window"> {
  const run = runs.find((r) => r.name === state.run) ?? runs[0];
  const worker = run?.workers.find((w) => w.name === state.worker) ?? run?.workers[0];
  const win = worker?.windows.find((w) => w.id === state.window) ?? worker?.windows[0];
  return { run: run?.name ?? "", worker: worker?.name ?? "", window: win?.id ?? "" };
}

class Shell {
  private store = new AppStore(readURL());
  private root = h("div", { id: "canning-root", "data-state": "loading" });
  private runSel = h("select", { id: "run-select", "aria-label": "Run" });
  private workerSel = h("select", { id: "worker-select", "aria-label": "Worker" });
  private windowSel = h("select", { id: "window-select", "aria-label": "Window" });
  private windowMeta = h("div", { id: "window-meta", class: "meta" });
  private status = h("div", { id: "discovery-status", class: "meta", role: "status" });
  private tabs = h("nav", { id: "view-tabs", class: "tabs", role: "tablist" });
  private viewEl = h("section", { id: "view", class: "view", "data-state": "loading" });
  private runs: RunEntry[] = [];
  private runsKey = "";
  private runsLoaded = false;
  private current: AbortController | null = null;
  private mountedKey = "";

  start(parent: HTMLElement): void {
    this.root.append(this.sidebar(), h("main", { class: "main" }, this.tabs, this.viewEl));
    parent.append(this.root);
    this.buildTabs();
    this.runSel.onchange = () => this.store.update({ run: this.runSel.value });
    this.workerSel.onchange = () => this.store.update({ worker: this.workerSel.value });
    this.windowSel.onchange = () => this.store.update({ window: this.windowSel.value });
    this.store.subscribe((state, previous) => this.onState(state, previous));
    this.setState("loading");
    this.viewEl.append(h("div", { class: "notice loading", role: "status" }, h("span", { class: "spinner" }), "Looking for profiles under the logdir…"));
    void this.poll();
  }

  private sidebar(): HTMLElement {
    return h(
      "aside",
      { class: "sidebar" },
      h("div", { class: "brand", text: "Canning Profiler" }),
      h("label", { class: "field" }, h("span", { text: "Run" }), this.runSel),
      h("label", { class: "field" }, h("span", { text: "Worker (rank)" }), this.workerSel),
      h("label", { class: "field" }, h("span", { text: "Window" }), this.windowSel),
      this.windowMeta,
      this.status,
    );
  }

  private buildTabs(): void {
    for (const view of VIEWS) {
      const tab = h("button", { type: "button", role: "tab", class: "tab", "data-view": view.id, id: `tab-${view.id}` }, view.title);
      tab.onclick = () => {
        if (this.store.state.view === view.id) this.mount(true);
        else this.store.update({ view: view.id });
      };
      this.tabs.append(tab);
    }
  }

  private setState(state: ViewState): void {
    this.root.dataset.state = state;
    this.viewEl.dataset.state = state;
  }

  private async poll(): Promise<void> {
    let next = POLL_MS;
    try {
      const data = await getJSON<RunsResponse>("runs");
      this.onRuns(data);
      if (data.loading) next = POLL_LOADING_MS;
    } catch (err) {
      if (!this.runsLoaded) {
        clear(this.viewEl);
        this.viewEl.append(h("div", { class: "notice error", role: "alert", id: "view-error" }, `Cannot list the runs: ${errorText(err)}`));
        this.setState("error");
      }
      this.status.textContent = `Listing runs failed: ${(err as Error).message}`;
    }
    window.setTimeout(() => void this.poll(), next);
  }

  private onRuns(data: RunsResponse): void {
    this.runsLoaded = true;
    this.status.textContent = data.error ? data.error : data.loading ? "Looking for new profiles…" : "";
    this.status.classList.toggle("error-text", !!data.error);
    const key = JSON.stringify(data.runs);
    if (key === this.runsKey && this.runs.length) return;
    this.runsKey = key;
    this.runs = data.runs;
    if (!data.runs.length) {
      this.clearSelectors();
      if (!data.loading) this.showNoRuns(data); // while still looking, keep the spinner
      return;
    }
    this.onState(this.store.state, this.store.state, true);
  }

  private showNoRuns(data: RunsResponse): void {
    this.mountedKey = "";
    this.current?.abort();
    showEmpty(
      { el: this.viewEl, setState: (state: ViewState) => this.setState(state) },
      "No profiles found under the logdir",
      data.error ??
        `Nothing under ${data.logdir ?? "the logdir"} looks like a profile (*.canning.json windows, *.pt.trace.json[.gz] traces or *_ascend_pt folders).`,
      "Write some with ps.tensorboard_trace_handler('./log') (from canning import profiling_suite as ps) and start TensorBoard with --logdir ./log. New runs appear here by themselves.",
    );
  }

  /** A new state (or a new listing): make the selection valid, then draw the selectors and the
   * view from it. A view's own options (search, range...) leave the shell as it is. */
  private onState(state: AppState, previous: AppState, listed = false): void {
    if (!this.runs.length) return;
    if (!listed && sameSelection(state, previous) && state.view === previous.view) return;
    const valid = validSelection(state, this.runs);
    const fix: Partial<AppState> = { ...valid };
    // a time range belongs to the window it was selected in
    if (!sameSelection(state, previous) && state.memory.range) fix.memory = { ...state.memory, range: null };
    // the corrected state comes back here as an update of its own; draw from the latest either way
    if (valid.run !== state.run || valid.worker !== state.worker || valid.window !== state.window || fix.memory) this.store.update(fix);
    this.renderSelectors(this.store.state);
    this.mount();
  }

  private clearSelectors(): void {
    clear(this.runSel);
    clear(this.workerSel);
    clear(this.windowSel);
    this.windowMeta.textContent = "";
  }

  private renderSelectors(state: AppState): void {
    this.clearSelectors();
    const run = this.runs.find((r) => r.name === state.run);
    const worker = run?.workers.find((w) => w.name === state.worker);
    for (const r of this.runs) this.runSel.append(option(r.name, r.name === "." ? ". (logdir)" : r.name, r.name === state.run));
    for (const w of run?.workers ?? []) this.workerSel.append(option(w.name, workerLabel(w), w.name === state.worker));
    for (const win of worker?.windows ?? []) {
      const label = win.status === "ready" ? win.label : `${win.label} (${win.status})`;
      this.windowSel.append(option(win.id, label, win.id === state.window));
    }
    const win = worker?.windows.find((w) => w.id === state.window);
    this.windowMeta.textContent = win ? `${win.format} · ${win.files.join(", ")}` : "";
    this.windowMeta.title = this.windowMeta.textContent;
    for (const tab of Array.from(this.tabs.children) as HTMLElement[]) {
      const on = tab.dataset.view === state.view;
      tab.classList.toggle("active", on);
      tab.setAttribute("aria-selected", String(on));
    }
  }

  /** (Re)mount the state's view for the state's window; no-op if neither changed (unless forced). */
  private mount(force = false): void {
    const state = this.store.state;
    const sel: Selection = { run: state.run, worker: state.worker, window: state.window };
    if (!sel.run || !sel.worker || !sel.window) return;
    const key = JSON.stringify([sel, state.view]);
    if (key === this.mountedKey && !force) return;
    this.mountedKey = key;
    this.current?.abort();
    const ctl = new AbortController();
    this.current = ctl;
    const view = VIEWS.find((v) => v.id === state.view) ?? VIEWS[0];
    this.viewEl.dataset.view = view.id;
    clear(this.viewEl);
    view.mount({
      el: this.viewEl,
      sel,
      run: this.runs.find((r) => r.name === sel.run),
      store: this.store,
      signal: ctl.signal,
      setState: (viewState) => {
        if (!ctl.signal.aborted) this.setState(viewState);
      },
    });
  }
}

export function render(): void {
  const style = document.createElement("style");
  style.textContent = css;
  document.head.append(style);
  new Shell().start(document.body);
}
