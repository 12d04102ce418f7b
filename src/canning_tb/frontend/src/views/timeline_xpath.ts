// The Timeline's critical path across ranks (docs/critical_path.md, "Across ranks"): with All ranks on, the path of
// a step from /critical_path_ranks drawn over every rank it passes: each hop (a rank's own work, a collective's
// transfer) on that rank's Steps lane, and at each hand-off a connector from the rank that arrived last at the
// collective to the rank the path goes on with; a list of the hops under the toolbar. The hops come on each rank's
// own window clock and the rank's shift places them, so a hop lies over that rank's events whatever the alignment;
// the hand-offs are vertical when the ranks are aligned "on the collectives" (the shift then applies the path's
// clock offsets: timeline_model.ts shifts), and the note says which alignment is in use. Nothing is computed here.
import { getJSON, type ClockOffset, type CrossRankPathResponse, type CrossRankStep, type PathHop, type Selection } from "../api";
import { h } from "../dom";
import { ms, us } from "../format";
import { pathColour } from "./critical_path";
import { GUTTER, RULER, toX, type Viewport } from "./timeline_draw";
import type { Lane, RankView } from "./timeline_model";

const HOPS = "200"; // the analysis keeps at most 64 hops of a step: one page holds them
const POLLS = 120; // while the ranks are digested
const OWN_WORK = "#1565c0"; // a rank's own work: apart from the Steps lane's own colours (a transfer: communication's)

/** "<worker>/<window>" -> the offset (ns) the path subtracted from that rank's clock. */
function clockMap(offsets: ClockOffset[]): Map<string, number> {
  return new Map(offsets.filter((o) => o.worker !== undefined).map((o) => [`${o.worker}/${o.window}`, o.offset_ns]));
}

/** The path's clock offsets at the selected window's position; null while the ranks are digested or unreadable. */
export async function pathClocks(sel: Selection, signal: AbortSignal): Promise<Map<string, number> | null> {
  try {
    const data = await getJSON<CrossRankPathResponse>("critical_path_ranks", { ...sel, limit: "1" }, signal);
    return data.loading ? null : clockMap(data.clock_offsets);
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    return null;
  }
}

/** A hop as drawn (tests read them from the canvas' data-xpath): times on the common axis, x on the canvas. */
interface DrawnHop {
  rank: number;
  what: string;
  from: number;
  to: number;
  x0: number;
  x1: number;
  y: number;
}

/** "rank 1 working, after AllReduce#3 (default)", "AllReduce#4 (default) waits for rank 1, then transfers on rank 0". */
export function hopText(hop: PathHop): string {
  if (hop.what === "transfer") return `${hop.after} waits for rank ${hop.waited_for ?? "–"} (the last to arrive), then transfers on rank ${hop.rank}`;
  return `rank ${hop.rank} working, ${hop.after === "step start" ? "from the step's start" : `after ${hop.after}`}`;
}

export class RanksPath {
  steps: CrossRankStep[] = [];
  shown: CrossRankStep | null = null;
  drawn: DrawnHop[] = [];
  /** the hops listed under the toolbar, with the note on the alignment */
  panel = h("div", { id: "timeline-xpath", class: "timeline-xpath" });
  private offsets: ClockOffset[] = [];

  constructor(private sel: Selection, private signal: AbortSignal, private ranks: RankView[], private zoom: (lo: number, hi: number) => void) {
    this.panel.hidden = true;
  }

  /** Every step's path in short (for the chooser), once the ranks are digested (asked again every second till then). */
  async list(): Promise<CrossRankStep[]> {
    let data = await getJSON<CrossRankPathResponse>("critical_path_ranks", { ...this.sel, limit: "1" }, this.signal);
    for (let tries = 0; data.loading && tries < POLLS && !this.signal.aborted; tries++) {
      await new Promise((done) => window.setTimeout(done, 1000));
      data = await getJSON<CrossRankPathResponse>("critical_path_ranks", { ...this.sel, limit: "1" }, this.signal);
    }
    this.steps = data.loading ? [] : data.steps;
    this.offsets = data.loading ? [] : data.clock_offsets;
    return this.steps;
  }

  async load(step: number): Promise<void> {
    const data = await getJSON<CrossRankPathResponse>("critical_path_ranks", { ...this.sel, limit: HOPS }, this.signal);
    this.offsets = data.loading ? [] : data.clock_offsets;
    this.shown = data.loading ? null : data.steps.find((s) => s.step === step) ?? null;
  }

  clear(): void {
    this.shown = null;
    this.drawn = [];
    this.panel.hidden = true;
    this.panel.replaceChildren();
  }

  /** rank number -> index of its view among those drawn (through the worker and window the route names) */
  private views(): Map<number, number> {
    const out = new Map<number, number>();
    for (const o of this.offsets) {
      const i = this.ranks.findIndex((r) => r.sel.worker === o.worker && r.sel.window === o.window);
      if (i >= 0) out.set(o.rank, i);
    }
    return out;
  }

  /** [from, to] of a hop on the common axis, or null where its rank is not drawn */
  private place(hop: PathHop, views = this.views()): [number, number] | null {
    const i = views.get(hop.rank);
    return i === undefined ? null : [hop.start_ns + this.ranks[i].shift, hop.end_ns + this.ranks[i].shift];
  }

  draw(ctx: CanvasRenderingContext2D, view: Viewport, lanes: Lane[]): void {
    this.drawn = [];
    if (!this.shown) return;
    const views = this.views();
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER, RULER, view.width, Math.max(0, view.height - RULER));
    ctx.clip();
    let prev: DrawnHop | null = null;
    for (const hop of this.shown.hops) {
      const place = this.place(hop, views);
      const lane = lanes.find((l) => l.rank === views.get(hop.rank) && l.kind === "steps");
      if (!place || !lane) {
        prev = null;
        continue;
      }
      const [x0, x1] = [toX(view, place[0]), toX(view, place[1])];
      const y = view.top + lane.y;
      const colour = hop.what === "transfer" ? pathColour("communication") : OWN_WORK;
      ctx.globalAlpha = 0.45;
      ctx.fillStyle = colour;
      ctx.fillRect(x0, y, Math.max(2, x1 - x0), lane.height);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = colour;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0, y + 1, Math.max(2, x1 - x0), lane.height - 2);
      const drawn = { rank: hop.rank, what: hop.what, from: Math.round(place[0]), to: Math.round(place[1]), x0: Math.round(x0 * 10) / 10, x1: Math.round(x1 * 10) / 10, y: Math.round(y + lane.height / 2) };
      if (prev && prev.rank !== drawn.rank) handOff(ctx, prev, drawn);
      this.drawn.push(drawn);
      prev = drawn;
    }
    ctx.restore();
  }

  /** The hops listed (each a button zooming onto it) and the note on which alignment places them. */
  describe(align: string): void {
    const path = this.shown;
    this.panel.hidden = !path;
    if (!path) return this.panel.replaceChildren();
    const moved = this.offsets.filter((o) => o.offset_ns !== 0).map((o) => `rank ${o.rank} ${o.offset_ns > 0 ? "+" : "−"}${us(Math.abs(o.offset_ns))} µs`);
    const offsets = moved.length ? `the path's clock offsets: ${moved.slice(0, 8).join(", ")}${moved.length > 8 ? ", …" : ""}` : "the path moved no rank's clock";
    const note = align === "collectives"
      ? `Ranks aligned on the collectives (${offsets}): the hand-offs are vertical.`
      : `Ranks aligned ${align === "step" ? "on their first steps" : "on the clock as recorded"}; ${offsets}, not applied here: a hand-off may slant by the difference (align "on the collectives" to apply them).`;
    const cut = path.hops_total > path.hops.length ? ` (the first ${path.hops.length} of ${path.hops_total} hops)` : "";
    const items = path.hops.map((hop, i) => {
      const button = h("button", { type: "button", class: "link-button", "data-rank": String(hop.rank), "data-what": hop.what, "data-start": String(hop.start_ns), "data-end": String(hop.end_ns) },
        `${ms(hop.ns)} ms, from ${signedMs(hop.start_ns)} to ${signedMs(hop.end_ns)} ms on rank ${hop.rank}'s clock: ${hopText(hop)}`);
      button.onclick = () => {
        const place = this.place(hop);
        if (place) this.zoom(place[0] - (place[1] - place[0]) * 0.1, place[1] + (place[1] - place[0]) * 0.1);
      };
      return h("li", { id: `timeline-xpath-${i}` }, button);
    });
    this.panel.replaceChildren(
      h("p", { id: "timeline-xpath-note" }, `Critical path of step ${path.step} across ranks (${ms(path.dur_ns)} ms, held most by rank ${path.held_by ?? "–"})${cut}. ${note}`),
      h("ol", { id: "timeline-xpath-hops" }, ...items),
    );
  }
}

/** A time that may lie before the window's start (the step began earlier on another rank): signed, never unknown. */
function signedMs(ns: number): string {
  return ns < 0 ? `−${ms(-ns)}` : ms(ns);
}

/** The hand-off at a collective: from the end of the last arrival's work to the start of the next hop. */
function handOff(ctx: CanvasRenderingContext2D, from: DrawnHop, to: DrawnHop): void {
  ctx.strokeStyle = "#c62828";
  ctx.lineWidth = 2;
  ctx.beginPath();
  ctx.moveTo(from.x1, from.y);
  ctx.lineTo(to.x0, to.y);
  ctx.stroke();
}
