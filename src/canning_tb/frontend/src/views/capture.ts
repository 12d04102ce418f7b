// Capture: ask a running job that uses ps.on_demand() to record N steps on all (or some) of its ranks,
// and follow the request (waiting for the job, scheduled, recording on K of N ranks, written). The
// server only writes the run's request file; it is off unless TensorBoard was started with
// --canning_capture, and then the panel says how to turn it on. Numbers shown are the server's.
import css from "./capture.css";
import { ApiError, getJSON, postCapture, type CaptureList, type CaptureRunState, type CaptureState, type CaptureTarget } from "../api";
import { clear, h, option } from "../dom";
import { errorText } from "./common";

const LIST_MS = 5000;
const STATE_MS = 1000;
const DONE = new Set(["written", "partial", "refused", "failed", "missed", "gone"]);
const OPTION_LABELS: [string, string][] = [
  ["record_shapes", "Record shapes"],
  ["profile_memory", "Profile memory"],
  ["with_stack", "With stack"],
  ["with_flops", "With FLOPs"],
  ["with_modules", "With modules"],
];

/** The sidebar's Capture section. currentRun: the run selected in the shell (preselected when a job
 * watches it); onWritten: a request was written on some rank, so the run list should be fetched again. */
export function captureSection(currentRun: () => string, onWritten: () => void): HTMLElement {
  if (!document.getElementById("canning-capture-style")) {
    document.head.append(h("style", { id: "canning-capture-style", text: css }));
  }
  return new CapturePanel(currentRun, onWritten).el;
}

function jobText(target: Pick<CaptureTarget, "kind" | "job">): string {
  const job = target.job;
  if (target.kind === "torch_npu_dynamic_profile") return `torch_npu dynamic_profile (profiler_config.json) · ${job.world_size} ranks logging · give the step to start at, as torch_npu counts them`;
  if (!job.live_ranks.length) return `no rank is watching now (last heartbeat ${job.last_heartbeat_s ?? "–"} s ago)`;
  const rate = job.steps_per_s === null ? "" : ` · ${job.steps_per_s.toFixed(1)} steps/s`;
  return `${job.live_ranks.length} of ${job.world_size} ranks watching · step ${job.step ?? "–"}${rate} · ${job.backend ?? ""}`;
}

class CapturePanel {
  readonly el = h("div", { id: "capture", class: "capture" });
  private open = h("button", { type: "button", id: "capture-open", class: "button", "aria-expanded": "false", text: "Capture…" });
  private panel = h("div", { id: "capture-panel", class: "capture-panel", hidden: true });
  private runSel = h("select", { id: "capture-run", "aria-label": "Run to capture" });
  private job = h("div", { id: "capture-job", class: "meta" });
  private steps = h("input", { id: "capture-steps", type: "number", min: 1, max: 50, value: 3, "aria-label": "Steps" });
  private startStep = h("input", { id: "capture-start-step", type: "number", min: 1, "aria-label": "Start step" });
  private startField = h("label", { class: "field", hidden: true }, h("span", { text: "Start step (torch_npu's count)" }), this.startStep);
  private kinds = new Map<string, CaptureTarget["kind"]>();
  private ranksMode = h("select", { id: "capture-ranks-mode", "aria-label": "Ranks" });
  private ranks = h("input", { id: "capture-ranks", type: "text", placeholder: "0,3", hidden: true, "aria-label": "Ranks to capture" });
  private activities = new Map<string, HTMLInputElement>();
  private options = new Map<string, HTMLInputElement>();
  private submit = h("button", { type: "button", id: "capture-submit", class: "button", text: "Capture" });
  private state = h("div", { id: "capture-state", class: "capture-state", role: "status", "data-state": "" });
  private form = h("div", { class: "capture-form" });
  private listTimer = 0;
  private stateTimer = 0;
  private followed = "";

  constructor(
    private currentRun: () => string,
    private onWritten: () => void,
  ) {
    this.ranksMode.append(option("all", "All ranks", true), option("list", "Only these ranks"));
    this.ranksMode.onchange = () => (this.ranks.hidden = this.ranksMode.value !== "list");
    const acts = h("fieldset", { class: "capture-set" }, h("legend", { text: "Activities (none: the job's own)" }));
    for (const name of ["CPU", "CUDA", "NPU"]) acts.append(this.check(this.activities, name, name, `capture-act-${name.toLowerCase()}`));
    const opts = h("fieldset", { class: "capture-set" }, h("legend", { text: "Options" }));
    for (const [key, label] of OPTION_LABELS) opts.append(this.check(this.options, key, label, `capture-${key.replace(/_/g, "-")}`));
    this.form.append(
      h("label", { class: "field" }, h("span", { text: "Run" }), this.runSel),
      this.job,
      h("label", { class: "field" }, h("span", { text: "Steps" }), this.steps),
      this.startField,
      h("label", { class: "field" }, h("span", { text: "Ranks" }), this.ranksMode, this.ranks),
      acts,
      opts,
      this.submit,
    );
    this.panel.append(this.form, this.state);
    this.el.append(this.open, this.panel);
    this.open.onclick = () => this.toggle();
    this.submit.onclick = () => void this.send();
    this.runSel.onchange = () => void this.refreshState(this.runSel.value);
  }

  private check(into: Map<string, HTMLInputElement>, key: string, label: string, id: string): HTMLElement {
    const box = h("input", { type: "checkbox", id });
    into.set(key, box);
    return h("label", { class: "capture-check" }, box, label);
  }

  private toggle(): void {
    this.panel.hidden = !this.panel.hidden;
    this.open.setAttribute("aria-expanded", String(!this.panel.hidden));
    window.clearTimeout(this.listTimer);
    if (!this.panel.hidden) void this.list();
  }

  private async list(): Promise<void> {
    try {
      this.showTargets(await getJSON<CaptureList>("capture"));
    } catch (err) {
      this.form.hidden = true;
      this.say(err instanceof ApiError && err.status === 403 ? "off" : "error", errorText(err));
      return; // off stays off until TensorBoard is restarted: no polling
    }
    if (!this.panel.hidden) this.listTimer = window.setTimeout(() => void this.list(), LIST_MS);
  }

  private showTargets(data: CaptureList): void {
    const keep = this.runSel.value || this.currentRun();
    clear(this.runSel);
    this.steps.max = String(data.limits.max_steps);
    if (!data.runs.length) {
      this.form.hidden = true;
      this.say("none", "No job under this logdir watches for a capture. Profile it with schedule=ps.on_demand() and ps.tensorboard_trace_handler(run folder); it appears here while it runs.");
      return;
    }
    this.form.hidden = false;
    const pick = data.runs.find((t) => t.run === keep) ?? data.runs[0];
    for (const t of data.runs) this.runSel.append(option(t.run, t.run === "." ? ". (logdir)" : t.run, t === pick));
    this.kinds = new Map(data.runs.map((t) => [t.run, t.kind]));
    this.startField.hidden = pick.kind !== "torch_npu_dynamic_profile";
    this.job.textContent = jobText(pick);
    if (!this.followed) void this.refreshState(pick.run);
  }

  private async send(): Promise<void> {
    const body: Record<string, unknown> = { run: this.runSel.value, steps: Number(this.steps.value) };
    if (this.kinds.get(this.runSel.value) === "torch_npu_dynamic_profile") body.start_step = Number(this.startStep.value);
    if (this.ranksMode.value === "list") body.ranks = this.ranks.value.split(",").filter((r) => r.trim()).map((r) => Number(r.trim()));
    body.activities = [...this.activities].filter(([, box]) => box.checked).map(([name]) => name);
    for (const [key, box] of this.options) body[key] = box.checked;
    this.submit.disabled = true;
    try {
      const asked = await postCapture(body);
      this.showState(asked.request);
      this.follow(asked.run);
    } catch (err) {
      this.say("error", errorText(err));
    } finally {
      this.submit.disabled = false;
    }
  }

  private follow(run: string): void {
    this.followed = run;
    window.clearTimeout(this.stateTimer);
    this.stateTimer = window.setTimeout(() => void this.refreshState(run, true), STATE_MS);
  }

  private async refreshState(run: string, following = false): Promise<void> {
    let data: CaptureRunState;
    try {
      data = await getJSON<CaptureRunState>("capture_state", { run });
    } catch (err) {
      this.say("error", errorText(err));
      return;
    }
    if (run !== this.runSel.value) return;
    this.startField.hidden = data.kind !== "torch_npu_dynamic_profile";
    this.job.textContent = jobText(data);
    this.showState(data.request);
    if (!following) return;
    if (data.request && !DONE.has(data.request.state)) this.follow(run);
    else {
      this.followed = "";
      if (data.request?.written_by.length) this.onWritten();
    }
  }

  private showState(request: CaptureState | null): void {
    if (!request) {
      this.say("", "No capture asked of this run yet.");
      return;
    }
    this.say(request.state, `Capture ${request.id}: ${request.message}`);
    const list = h("ul", { class: "capture-ranks" });
    for (const r of request.ranks) {
      const what = r.windows.length ? r.windows.join(", ") : r.message;
      list.append(h("li", { "data-rank": r.rank, "data-state": r.state, text: `rank ${r.rank}: ${r.state}${what ? ` · ${what}` : ""}` }));
    }
    this.state.append(list);
  }

  private say(state: string, text: string): void {
    clear(this.state);
    this.state.dataset.state = state;
    this.state.classList.toggle("error-text", state === "error" || state === "refused" || state === "failed");
    this.state.append(h("div", { class: "capture-message", text }));
  }
}
