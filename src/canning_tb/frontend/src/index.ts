// Entry point: TensorBoard's plugin iframe runs `import("./index.js").then((m) => m.render())`.
// The shell: run / worker / window selectors, a tab per view, and the view area, all drawn from the
// app state (state.ts); the controls only ask the store for a new state. It polls /runs so runs and
// windows written while TensorBoard runs appear by themselves.
import css from "./style.css";
import { getJSON, type RunEntry, type RunsResponse, type Selection, type WorkerEntry } from "./api";
import { clear, h, option } from "./dom";
import { AppStore, baselineMoved, CHIP_OPTION, readURL, withRunDefaults, type AppState } from "./state";
import { followTheme } from "./theme";
import { captureSection } from "./views/capture";
import { bindTableSorts, errorText } from "./views/common";
import { VIEWS } from "./views/index";
import { showEmpty, type ViewState } from "./views/view";

const POLL_LOADING_MS = 1500;
const POLL_MS = 10_000;

function workerLabel(worker: WorkerEntry): string {
  return worker.rank >= 0 && !worker.name.includes(String(worker.rank)) ? `rank ${worker.rank} · ${worker.name}` : worker.name;
}

type Picked = Pick<AppState, "run" | "worker" | "window">;

function sameSelection(a: Picked, b: Picked): boolean {
  return a.run === b.run && a.worker === b.worker && a.window === b.window;
}

/** Whether `to` selects another window than `from` did; a name `from` left empty (a link with the
 * run only) is filled in, not moved from. */
function movedFrom(from: Picked, to: Picked): boolean {
  return (["run", "worker", "window"] as const).some((key) => from[key] !== "" && from[key] !== to[key]);
}

/** Time ranges and a selected slice belong to the window they were chosen in (ns from its start,
 * an event of its trace): another window starts without them. */
function forgetWindowPlaces(state: AppState): AppState {
  return { ...state, memory: { ...state.memory, range: null }, timeline: { ...state.timeline, range: null, event: -1, mark: -1, lane: "" } };
}

/** The state once the selection is `valid`: what belonged to the window or the run left behind is
 * forgotten (state.ts, withRunDefaults), what the user set with the move is kept. */
function settledState(previous: AppState, state: AppState, valid: Picked): AppState {
  let next: AppState = { ...state, ...valid };
  if (movedFrom(previous, state) || movedFrom(state, valid)) next = forgetWindowPlaces(next);
  const runMoved = (previous.run !== "" && previous.run !== state.run) || (state.run !== "" && state.run !== valid.run);
  // a baseline set in the same step as the run (Compare's Swap) was chosen for the new run
  if (runMoved) next = withRunDefaults(next, baselineMoved(previous, state));
  return next;
}

/** The names the selection falls back to when the state's are not (or no longer) listed, and a
 * note for each name the state asked for that is not there (shown when the state is a link's). */
function validSelection(state: AppState, runs: RunEntry[]): { pick: Picked; notes: string[] } {
  const notes: string[] = [];
  const missing = (what: string, name: string, instead: string) => {
    if (name) notes.push(`${what} “${name}” is not in the logdir (any more): showing “${instead}”`);
  };
  const run = runs.find((r) => r.name === state.run) ?? runs[0];
  if (run.name !== state.run) missing("run", state.run, run.name);
  const worker = run.workers.find((w) => w.name === state.worker) ?? run.workers[0];
  if (worker && worker.name !== state.worker && run.name === state.run) missing(`worker of run ${run.name}`, state.worker, worker.name);
  const win = worker?.windows.find((w) => w.id === state.window) ?? worker?.windows[0];
  if (win && win.id !== state.window && worker.name === state.worker) missing(`window of ${worker.name}`, state.window, win.label);
  return { pick: { run: run.name, worker: worker?.name ?? "", window: win?.id ?? "" }, notes };
}

/** Whether a name the selection asks for is not listed yet (a link's run may appear only once
 * TensorBoard has read the logdir): then the shell waits instead of falling back. */
function notListedYet(state: AppState, runs: RunEntry[]): boolean {
  const run = runs.find((r) => r.name === state.run);
  const worker = run?.workers.find((w) => w.name === state.worker);
  if (state.run && !run) return true;
  if (state.worker && !worker) return true;
  return !!state.window && !worker?.windows.some((w) => w.id === state.window);
}

/** Any text cut short by its box (an ellipsis) gets its whole text as a title when hovered, so no
 * view has to remember it for each cell. */
function titleIfCut(target: EventTarget | null): void {
  if (!(target instanceof HTMLElement) || target.title || !target.textContent) return;
  if (target.scrollWidth > target.clientWidth + 1 && getComputedStyle(target).textOverflow === "ellipsis") target.title = target.textContent;
}

class Shell {
  private url = readURL();
  private store = new AppStore(this.url.state);
  private root = h("div", { id: "canning-root", "data-state": "loading" });
  private runSel = h("select", { id: "run-select", "aria-label": "Run" });
  private workerSel = h("select", { id: "worker-select", "aria-label": "Worker" });
  private windowSel = h("select", { id: "window-select", "aria-label": "Window" });
  private windowLabel = h("div", { id: "window-label", class: "window-label" });
  private windowMeta = h("div", { id: "window-meta", class: "meta" });
  private note = h("div", { id: "url-note", class: "notice warn", role: "note", hidden: true });
  private status = h("div", { id: "discovery-status", class: "meta", role: "status" });
  private tabs = h("nav", { id: "view-tabs", class: "tabs", role: "tablist" });
  private viewEl = h("section", { id: "view", class: "view", "data-state": "loading" });
  private runs: RunEntry[] = [];
  private runsKey = "";
  private runsLoaded = false;
  private discovering = true;
  /** the selection is still the link's (not yet resolved against the listing, not changed by the user) */
  private fromLink = true;
  private current: AbortController | null = null;
  private mountedKey = "";

  start(parent: HTMLElement): void {
    this.root.append(this.sidebar(), h("main", { class: "main" }, this.tabs, this.note, this.viewEl));
    parent.append(this.root);
    this.buildTabs();
    bindTableSorts(this.store);
    this.root.addEventListener("mouseover", (ev) => titleIfCut(ev.target));
    this.showNotes(this.url.notes);
    // the charts take their colours when drawn: draw the view again in the new theme
    followTheme(() => this.mount(true));
    this.runSel.onchange = () => this.pick({ run: this.runSel.value });
    this.workerSel.onchange = () => this.pick({ worker: this.workerSel.value });
    this.windowSel.onchange = () => this.pick({ window: this.windowSel.value });
    this.store.subscribe((state, previous) => this.onState(state, previous));
    this.setState("loading");
    this.viewEl.append(h("div", { class: "notice loading", role: "status" }, h("span", { class: "spinner" }), "Looking for profiles under the logdir…"));
    void this.poll();
  }

  /** The user picks another run, worker or window: the link's notes no longer apply. */
  private pick(patch: Partial<AppState>): void {
    this.fromLink = false;
    this.showNotes([]);
    this.store.update(patch);
  }

  /** Says which of the link's values could not be used, and what is shown instead. */
  private showNotes(notes: string[]): void {
    const shown = new Set(Array.from(this.note.querySelectorAll("li"), (li) => li.textContent ?? ""));
    const fresh = notes.filter((note) => !shown.has(note));
    if (!notes.length) {
      this.note.hidden = true;
      clear(this.note);
      return;
    }
    if (!fresh.length) return;
    let list = this.note.querySelector("ul");
    if (!list) {
      const close = h("button", { type: "button", class: "link-button note-close", "aria-label": "Dismiss", text: "Dismiss" });
      close.onclick = () => this.showNotes([]);
      list = h("ul");
      this.note.append(h("strong", { text: "This link asks for something not available here; " }), "the rest of it is shown.", list, close);
    }
    list.append(...fresh.map((note) => h("li", { text: note })));
    this.note.hidden = false;
  }

  private sidebar(): HTMLElement {
    return h(
      "aside",
      { class: "sidebar" },
      h("div", { class: "brand", text: "Canning Profiler" }),
      h("label", { class: "field" }, h("span", { text: "Run" }), this.runSel),
      h("label", { class: "field" }, h("span", { text: "Worker (rank)" }), this.workerSel),
      h("label", { class: "field" }, h("span", { text: "Window" }), this.windowSel),
      this.windowLabel,
      this.windowMeta,
      this.status,
      captureSection(() => this.store.state.run, () => this.refreshRuns()),
    );
  }

  /** The runs listed again now and a few times more (a capture was written: the next scan of the
   * logdir lists its windows), outside the polling loop. */
  private refreshRuns(times = 6): void {
    getJSON<RunsResponse>("runs").then((data) => this.onRuns(data), () => undefined);
    if (times > 1) window.setTimeout(() => this.refreshRuns(times - 1), POLL_LOADING_MS);
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
    const discovered = this.discovering && !data.loading;
    this.discovering = data.loading;
    this.status.textContent = data.error ? data.error : data.loading ? "Looking for new profiles…" : "";
    this.status.classList.toggle("error-text", !!data.error);
    const key = JSON.stringify(data.runs);
    if (key === this.runsKey && this.runs.length && !discovered) return;
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
    // the chip is part of what a view is asked about (Selection.chip): choosing one mounts the view again
    const sameChip = (state.options[CHIP_OPTION] ?? "") === (previous.options[CHIP_OPTION] ?? "");
    if (!listed && sameSelection(state, previous) && state.view === previous.view && sameChip) return;
    if (this.fromLink && this.discovering && notListedYet(state, this.runs)) {
      this.viewEl.replaceChildren(h("div", { class: "notice loading", role: "status" }, h("span", { class: "spinner" }), `Looking for ${state.run} / ${state.worker || "…"} under the logdir…`));
      return;
    }
    const { pick: valid, notes } = validSelection(state, this.runs);
    // notes are about the link; a run the user picks has other workers, as it should
    if (this.fromLink && notes.length) this.showNotes(notes);
    this.fromLink = false;
    const next = settledState(previous, state, valid);
    // the corrected state comes back here as an update of its own; draw from the latest either way
    if (JSON.stringify(next) !== JSON.stringify(state)) this.store.update(next);
    this.renderSelectors(this.store.state);
    this.mount();
  }

  private clearSelectors(): void {
    clear(this.runSel);
    clear(this.workerSel);
    clear(this.windowSel);
    this.windowMeta.textContent = "";
    this.windowLabel.textContent = "";
  }

  private renderSelectors(state: AppState): void {
    this.clearSelectors();
    const run = this.runs.find((r) => r.name === state.run);
    const worker = run?.workers.find((w) => w.name === state.worker);
    for (const r of this.runs) this.runSel.append(option(r.name, r.name === "." ? ". (logdir)" : r.name, r.name === state.run));
    for (const w of run?.workers ?? []) this.workerSel.append(option(w.name, workerLabel(w), w.name === state.worker));
    for (const win of worker?.windows ?? []) {
      const label = win.status === "ready" ? win.label : `${win.label} (${win.status})`;
      const opt = option(win.id, label, win.id === state.window);
      if (win.trigger) opt.title = win.trigger;
      this.windowSel.append(opt);
    }
    const win = worker?.windows.find((w) => w.id === state.window);
    // a <select> cuts a long label: the whole label is written out below it, wrapped (with why the job took it)
    const shown = this.windowSel.selectedOptions[0]?.textContent ?? "";
    const label = win?.trigger ? `${shown}: ${win.trigger}` : shown;
    this.windowLabel.textContent = label;
    this.windowSel.title = label;
    this.runSel.title = this.runSel.selectedOptions[0]?.textContent ?? "";
    this.workerSel.title = this.workerSel.selectedOptions[0]?.textContent ?? "";
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
    const sel: Selection = { run: state.run, worker: state.worker, window: state.window, chip: state.options[CHIP_OPTION] ?? "" };
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
