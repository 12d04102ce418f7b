// Entry point: TensorBoard's plugin iframe runs `import("./index.js").then((m) => m.render())`.
// The shell: run / worker / window selectors, a tab per view, and the view area. It polls /runs so
// runs and windows written while TensorBoard runs appear by themselves.
import css from "./style.css";
import { ApiError, getJSON, type RunInfo, type RunsResponse, type Selection, type WorkerInfo } from "./api";
import { clear, h, option } from "./dom";
import { DEFAULT_VIEW, VIEWS } from "./views/index";
import { showEmpty, type ViewState } from "./views/view";

const POLL_LOADING_MS = 1500;
const POLL_MS = 10_000;

function workerLabel(w: WorkerInfo): string {
  return w.rank >= 0 && !w.name.includes(String(w.rank)) ? `rank ${w.rank} · ${w.name}` : w.name;
}

class App {
  private root = h("div", { id: "canning-root", "data-state": "loading" });
  private runSel = h("select", { id: "run-select", "aria-label": "Run" });
  private workerSel = h("select", { id: "worker-select", "aria-label": "Worker" });
  private windowSel = h("select", { id: "window-select", "aria-label": "Window" });
  private windowMeta = h("div", { id: "window-meta", class: "meta" });
  private status = h("div", { id: "discovery-status", class: "meta", role: "status" });
  private tabs = h("nav", { id: "view-tabs", class: "tabs", role: "tablist" });
  private viewEl = h("section", { id: "view", class: "view", "data-state": "loading" });
  private runs: RunInfo[] = [];
  private runsKey = "";
  private runsLoaded = false;
  private viewId = DEFAULT_VIEW;
  private current: AbortController | null = null;
  private mountedKey = "";

  start(parent: HTMLElement): void {
    const side = h(
      "aside",
      { class: "sidebar" },
      h("div", { class: "brand", text: "Canning Profiler" }),
      h("label", { class: "field" }, h("span", { text: "Run" }), this.runSel),
      h("label", { class: "field" }, h("span", { text: "Worker (rank)" }), this.workerSel),
      h("label", { class: "field" }, h("span", { text: "Window" }), this.windowSel),
      this.windowMeta,
      this.status,
    );
    for (const v of VIEWS) {
      const b = h("button", { type: "button", role: "tab", class: "tab", "data-view": v.id, id: `tab-${v.id}` }, v.title);
      b.onclick = () => {
        this.viewId = v.id;
        this.mount(true);
      };
      this.tabs.append(b);
    }
    this.root.append(side, h("main", { class: "main" }, this.tabs, this.viewEl));
    parent.append(this.root);
    this.runSel.onchange = () => this.fillWorkers();
    this.workerSel.onchange = () => this.fillWindows();
    this.windowSel.onchange = () => this.mount();
    this.setState("loading");
    this.viewEl.append(h("div", { class: "notice loading", role: "status" }, h("span", { class: "spinner" }), "Looking for profiles under the logdir…"));
    void this.poll();
  }

  private setState(s: ViewState): void {
    this.root.dataset.state = s;
    this.viewEl.dataset.state = s;
  }

  private async poll(): Promise<void> {
    let next = POLL_MS;
    try {
      const data = await getJSON<RunsResponse>("runs");
      this.onRuns(data);
      if (data.loading) next = POLL_LOADING_MS;
    } catch (e) {
      if (!this.runsLoaded) {
        clear(this.viewEl);
        this.viewEl.append(h("div", { class: "notice error", role: "alert", id: "view-error" }, `Cannot list the runs: ${e instanceof ApiError ? e.message : String(e)}`));
        this.setState("error");
      }
      this.status.textContent = `Listing runs failed: ${(e as Error).message}`;
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
      if (data.loading) return; // still looking: keep the spinner
      this.mountedKey = "";
      this.current?.abort();
      const host = { el: this.viewEl, sel: { run: "", worker: "", window: "" }, signal: new AbortController().signal, setState: (s: ViewState) => this.setState(s) };
      showEmpty(
        host,
        "No profiles found under the logdir",
        data.error ??
          `Nothing under ${data.logdir ?? "the logdir"} looks like a profile (*.canning.json windows, *.pt.trace.json[.gz] traces or *_ascend_pt folders).`,
        "Write some with ps.tensorboard_trace_handler('./log') (from canning import profiling_suite as ps) and start TensorBoard with --logdir ./log. New runs appear here by themselves.",
      );
      return;
    }
    const prev = this.runSel.value;
    clear(this.runSel);
    for (const r of data.runs) this.runSel.append(option(r.name, r.name === "." ? ". (logdir)" : r.name, r.name === prev));
    if (!data.runs.some((r) => r.name === prev)) this.runSel.selectedIndex = 0;
    this.fillWorkers();
  }

  private clearSelectors(): void {
    clear(this.runSel);
    clear(this.workerSel);
    clear(this.windowSel);
    this.windowMeta.textContent = "";
  }

  private run(): RunInfo | undefined {
    return this.runs.find((r) => r.name === this.runSel.value);
  }

  private fillWorkers(): void {
    const prev = this.workerSel.value;
    clear(this.workerSel);
    const workers = this.run()?.workers ?? [];
    for (const w of workers) this.workerSel.append(option(w.name, workerLabel(w), w.name === prev));
    if (!workers.some((w) => w.name === prev)) this.workerSel.selectedIndex = 0;
    this.fillWindows();
  }

  private fillWindows(): void {
    const prev = this.windowSel.value;
    clear(this.windowSel);
    const worker = this.run()?.workers.find((w) => w.name === this.workerSel.value);
    const windows = worker?.windows ?? [];
    for (const w of windows) {
      const label = w.status === "ready" ? w.label : `${w.label} (${w.status})`;
      this.windowSel.append(option(w.id, label, w.id === prev));
    }
    if (!windows.some((w) => w.id === prev)) this.windowSel.selectedIndex = 0;
    this.mount();
  }

  private selection(): Selection | null {
    const run = this.runSel.value;
    const worker = this.workerSel.value;
    const window = this.windowSel.value;
    return run && worker && window ? { run, worker, window } : null;
  }

  /** (Re)mount the current view for the current selection; no-op if nothing changed. */
  private mount(force = false): void {
    const sel = this.selection();
    for (const b of Array.from(this.tabs.children) as HTMLElement[]) {
      const on = b.dataset.view === this.viewId;
      b.classList.toggle("active", on);
      b.setAttribute("aria-selected", String(on));
    }
    const win = this.run()
      ?.workers.find((w) => w.name === this.workerSel.value)
      ?.windows.find((w) => w.id === this.windowSel.value);
    this.windowMeta.textContent = win ? `${win.format} · ${win.files.join(", ")}` : "";
    this.windowMeta.title = this.windowMeta.textContent;
    if (!sel) return;
    const key = JSON.stringify([sel, this.viewId]);
    if (key === this.mountedKey && !force) return;
    this.mountedKey = key;
    this.current?.abort();
    const ctl = new AbortController();
    this.current = ctl;
    const view = VIEWS.find((v) => v.id === this.viewId) ?? VIEWS[0];
    this.viewEl.dataset.view = view.id;
    clear(this.viewEl);
    view.mount({
      el: this.viewEl,
      sel,
      run: this.run(),
      signal: ctl.signal,
      setState: (s) => {
        if (!ctl.signal.aborted) this.setState(s);
      },
    });
  }
}

export function render(): void {
  const style = document.createElement("style");
  style.textContent = css;
  document.head.append(style);
  new App().start(document.body);
}
