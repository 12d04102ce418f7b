// The Timeline's critical-path overlay (docs/critical_path.md): a toggle and a step chooser in the toolbar (the
// step in the app state, `tl.path`, -1 off) and, while on, the path's segments of that step highlighted on the
// selected rank's tracks: each segment outlined in its category's colour on the track it ran on (a thread, a
// stream), or on the rank's Steps lane where no track shown is its lane (a gap, an untraced wait). Segments come
// from /critical_path (the digest's, at most 200 per step: the longest); nothing is computed here. With All ranks
// on, the scope chooser (`tl.pathranks`) offers the step's path across the ranks instead (timeline_xpath.ts).
import { getJSON, type CriticalPathResponse, type CriticalPathStep, type Selection } from "../api";
import { h, option } from "../dom";
import { ms } from "../format";
import type { AppStore } from "../state";
import { pathColour } from "./critical_path";
import { GUTTER, RULER, toX, type Viewport } from "./timeline_draw";
import type { Lane, RankView } from "./timeline_model";
import { RanksPath } from "./timeline_xpath";

const SEGMENTS = "200";

/** "thread 12 (pid 3)" -> host track (pid, tid); "stream 7 (device 0)" -> device track (device, stream). */
function laneKey(lane: string): string {
  const thread = /^thread (-?\d+) \(pid (-?\d+)\)$/.exec(lane);
  if (thread) return `host:${thread[2]}:${thread[1]}`;
  const stream = /^stream (-?\d+) \(device (-?\d+)\)$/.exec(lane);
  return stream ? `device:${stream[2]}:${stream[1]}` : "";
}

export class PathOverlay {
  /** every step's categories (for the chooser), then the chosen step with its segments */
  private steps: CriticalPathStep[] = [];
  private shown: CriticalPathStep | null = null;
  private select = h("select", { id: "timeline-path-step", "aria-label": "Step whose critical path is highlighted" });
  private box = h("input", { type: "checkbox", id: "timeline-path" });
  private scope = h("select", { id: "timeline-path-scope", "aria-label": "Whose critical path" }, option("rank", "this rank"), option("ranks", "across ranks"));
  /** segments drawn at the last draw (tests read it from the canvas) */
  drawn = 0;
  readonly ranksPath: RanksPath;

  constructor(private store: AppStore, private sel: Selection, private signal: AbortSignal, private redraw: () => void,
    ranks: RankView[], zoom: (lo: number, hi: number) => void) {
    this.ranksPath = new RanksPath(sel, signal, ranks, zoom);
    this.scope.disabled = ranks.length < 2;
  }

  private get step(): number {
    return this.store.state.timeline.path;
  }

  /** the path across ranks: chosen, and more than one rank side by side */
  private get across(): boolean {
    return this.store.state.timeline.pathRanks && !this.scope.disabled;
  }

  /** The toolbar's toggle and step chooser. */
  control(): HTMLElement {
    this.box.checked = this.step >= 0;
    this.select.disabled = true;
    this.box.onchange = () => {
      const first = this.select.options.length ? Number(this.select.options[0].value) : -1;
      this.store.timeline({ path: this.box.checked ? (this.select.value ? Number(this.select.value) : first) : -1 });
      void this.load();
    };
    this.select.onchange = () => {
      this.store.timeline({ path: Number(this.select.value) });
      void this.load();
    };
    this.scope.value = this.across ? "ranks" : "rank";
    this.scope.onchange = () => {
      this.store.timeline({ pathRanks: this.scope.value === "ranks" });
      void this.list();
    };
    return h("label", { title: "Highlight the critical path of a step on this rank's tracks, or (All ranks) across the ranks (docs/critical_path.md)" }, this.box, "Critical path ", this.select, this.scope);
  }

  /** The chooser's steps: this rank's (/critical_path) or across the ranks (/critical_path_ranks). */
  private async choices(): Promise<{ number: number; label: string }[]> {
    if (this.across) {
      const steps = await this.ranksPath.list();
      return steps.map((s) => ({ number: s.step, label: `step ${s.step} (${ms(s.dur_ns)} ms, rank ${s.held_by ?? "–"})` }));
    }
    const data = await getJSON<CriticalPathResponse>("critical_path", { ...this.sel, limit: "1" }, this.signal);
    this.steps = data.steps;
    return data.steps.map((s) => ({ number: s.number, label: `step ${s.number} (${ms(s.dur_ns)} ms)` }));
  }

  /** The steps' list, asked once the panel's first tiles are in (they come first). */
  start(): void {
    void this.list();
  }

  private async list(): Promise<void> {
    try {
      const steps = await this.choices();
      this.select.replaceChildren(...steps.map((s) => option(String(s.number), s.label, s.number === this.step)));
      this.select.disabled = !steps.length;
      this.box.disabled = !steps.length;
      // a step the other scope had and this one has not: its first step instead
      if (this.step >= 0 && steps.length && !steps.some((s) => s.number === this.step)) this.store.timeline({ path: steps[0].number });
      if (this.step >= 0) await this.load();
    } catch (err) {
      if ((err as Error).name !== "AbortError") this.box.disabled = true;
    }
  }

  private async load(): Promise<void> {
    const step = this.step;
    this.box.checked = step >= 0;
    this.shown = null;
    this.ranksPath.clear();
    if (this.across) return this.loadRanks(step);
    if (step < 0 || !this.steps.some((s) => s.number === step)) {
      this.redraw();
      return;
    }
    try {
      const data = await getJSON<CriticalPathResponse>("critical_path", { ...this.sel, step: String(step), limit: SEGMENTS }, this.signal);
      this.shown = data.steps[0] ?? null;
    } catch (err) {
      if ((err as Error).name === "AbortError") return;
      this.shown = null;
    }
    this.redraw();
  }

  private async loadRanks(step: number): Promise<void> {
    if (step >= 0 && this.ranksPath.steps.some((s) => s.step === step)) {
      try {
        await this.ranksPath.load(step);
      } catch (err) {
        if ((err as Error).name === "AbortError") return;
      }
    }
    this.ranksPath.describe(this.store.state.timeline.align);
    this.redraw();
  }

  /** The alignment changed: the note under the toolbar says which one places the path. */
  aligned(): void {
    if (this.across) this.ranksPath.describe(this.store.state.timeline.align);
  }

  /** The segments of the chosen step over rank `index`'s lanes (inside the data area), or the path across ranks. */
  draw(ctx: CanvasRenderingContext2D, view: Viewport, ranks: RankView[], lanes: Lane[], index: number): void {
    this.drawn = 0;
    if (this.across) {
      this.ranksPath.draw(ctx, view, lanes);
      this.drawn = this.ranksPath.drawn.length;
      return;
    }
    const path = this.shown;
    const rank = ranks[index];
    if (!path || !rank || this.step !== path.number) return;
    // the timeline's own step of that number places the path (both are window-relative; their origins may differ)
    const mark = rank.tracks.steps.find((s) => s.number === path.number);
    const shift = rank.shift + (mark ? mark.start_ns - path.start_ns : 0);
    const trackOf = new Map(rank.tracks.tracks.map((t) => [`${t.kind === "device" ? "device" : "host"}:${t.kind === "device" ? t.device : t.pid}:${t.tid}`, t.id]));
    const mine = lanes.filter((lane) => lane.rank === index);
    const stepsLane = mine.find((lane) => lane.kind === "steps");
    const top = view.top;
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER, RULER, view.width, Math.max(0, view.height - RULER));
    ctx.clip();
    for (const seg of path.segments) {
      const track = trackOf.get(laneKey(seg.lane));
      const lane = (track !== undefined && mine.find((l) => l.kind === "row" && l.track === track && l.depth === 0)) || stepsLane;
      if (!lane) continue;
      const x0 = toX(view, seg.ts_ns + shift);
      const x1 = toX(view, seg.ts_ns + seg.dur_ns + shift);
      const w = Math.max(2, x1 - x0);
      const y = top + lane.y;
      ctx.globalAlpha = 0.35;
      ctx.fillStyle = pathColour(seg.category);
      ctx.fillRect(x0, y, w, lane.height);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = pathColour(seg.category);
      ctx.lineWidth = 2;
      ctx.strokeRect(x0, y + 1, w, lane.height - 2);
      this.drawn += 1;
    }
    ctx.restore();
  }
}
