// The critical path as cards (docs/critical_path.md): per step of the window, the time each category holds on
// the path (its share of the step) and the longest segments, each a link into the Timeline at its instant with
// the step's path highlighted (timeline_path.ts); across ranks, which rank held each step and the clock offsets
// applied to align the ranks. Every figure is /critical_path's or /critical_path_ranks'; nothing is computed here.
import { getJSON, windowParams, type ClusterResponse, type CriticalPathResponse, type CriticalPathStep, type CrossRankPathResponse, type PathSegment } from "../api";
import { h } from "../dom";
import { ms, pct } from "../format";
import type { AppStore } from "../state";
import { errorText, openRank } from "./common";
import type { ViewHost } from "./view";

const STEPS_SHOWN = 20;
const RANKS_NAMED = 4;
const PAGE = "1"; // the card lists each step's `longest`; the Timeline asks for the step's segments itself

/** The colour of each path category (the Timeline's overlay uses the same). */
export const PATH_COLOURS: Record<string, string> = {
  host: "#fbc02d", python: "#ffb74d", dataloader: "#f57c00", runtime: "#7b1fa2", sync: "#ad1457",
  collective_host: "#e57373", kernel: "#388e3c", communication: "#c62828", memcpy: "#1976d2", memset: "#64b5f6",
  latency: "#8d6e63", idle: "#9e9e9e", untraced: "#cfd8dc",
};

export function pathColour(category: string): string {
  return PATH_COLOURS[category] ?? "#607d8b";
}

/** Opens the Timeline on `seg` (window-relative ns) with the path of `step` highlighted. */
export function openPathAt(store: AppStore, step: number, seg: Pick<PathSegment, "ts_ns" | "dur_ns">, pad = 4): void {
  const span = Math.max(seg.dur_ns * pad, 100_000);
  const mid = seg.ts_ns + seg.dur_ns / 2;
  const range: [number, number] = [Math.floor(mid - span / 2), Math.ceil(mid + span / 2)];
  store.update({ view: "timeline", timeline: { ...store.state.timeline, focus: "", focusBy: "name", event: -1, range, mark: Math.max(0, Math.round(seg.ts_ns)), lane: "", path: step } });
}

function shareBar(step: CriticalPathStep): HTMLElement {
  return h(
    "div",
    { class: "path-bar", title: step.categories.map((c) => `${c.category}: ${ms(c.ns)} ms (${pct(c.share)}%)`).join("\n") },
    ...step.categories.map((c) => h("span", { class: "path-bar-part", "data-category": c.category, style: `width:${((c.share ?? 0) * 100).toFixed(3)}%;background:${pathColour(c.category)}` })),
  );
}

function categoryText(step: CriticalPathStep): HTMLElement {
  return h(
    "span",
    { class: "path-categories" },
    ...step.categories.map((c) => h("span", { class: "path-category", "data-category": c.category, "data-ns": String(c.ns) }, h("span", { class: "swatch", style: `background:${pathColour(c.category)}` }), `${c.category} ${ms(c.ns)} ms (${pct(c.share)}%)`)),
  );
}

function segmentLinks(store: AppStore, step: CriticalPathStep): HTMLElement {
  return h(
    "span",
    { class: "path-segments" },
    ...step.longest.map((seg, i) => {
      const what = seg.name || `(${seg.category})`;
      const button = h("button", { type: "button", class: "button timeline-link path-segment", id: `cp-seg-${step.number}-${i}`, "data-ts-ns": String(seg.ts_ns), title: `${seg.lane}: ${what}, ${ms(seg.dur_ns)} ms. Open the Timeline here with the path highlighted` }, `${what} ${ms(seg.dur_ns)} ms`);
      button.onclick = () => openPathAt(store, step.number, seg);
      return button;
    }),
  );
}

function stepRow(store: AppStore, step: CriticalPathStep): HTMLTableRowElement {
  const show = h("button", { type: "button", class: "button", id: `cp-show-${step.number}`, title: "The Timeline on this step, its critical path highlighted" }, "Timeline");
  show.onclick = () => openPathAt(store, step.number, { ts_ns: step.start_ns, dur_ns: step.dur_ns }, 1.1);
  return h(
    "tr",
    { "data-step": String(step.number) },
    h("td", { class: "num", text: String(step.number) }),
    h("td", { class: "num", text: ms(step.dur_ns) }),
    h("td", {}, shareBar(step), categoryText(step)),
    h("td", {}, segmentLinks(store, step)),
    h("td", {}, show),
  );
}

function pathTable(store: AppStore, data: CriticalPathResponse): HTMLElement {
  const steps = data.steps.slice(0, STEPS_SHOWN);
  const table = h(
    "table",
    { id: "cp-table", class: "data-table" },
    h("thead", {}, h("tr", {}, ...["Step", "Step (ms)", "What held the step (time on the critical path)", "Longest pieces of the path", ""].map((t) => h("th", { text: t })))),
    h("tbody", {}, ...steps.map((step) => stepRow(store, step))),
  );
  const more = data.steps.length > STEPS_SHOWN ? h("p", { class: "muted", text: `The first ${STEPS_SHOWN} of ${data.steps.length} steps.` }) : null;
  return h("div", {}, h("div", { class: "table-wrap" }, table), more);
}

const NOTE = "The chain of work that held each step from its start to its end, through host threads, launches, device streams and synchronisations (docs/critical_path.md): shortening anything else does not shorten the step.";

/** The Overview's "Critical path" card, filled when /critical_path answers. */
export function criticalPathCard(host: ViewHost): HTMLElement {
  const body = h("p", { class: "muted", text: "Reading the critical path…" });
  const el = h("section", { class: "card", id: "ov-critical-path", "data-state": "loading" }, h("h3", { class: "section-title", text: "Critical path per step" }), h("p", { class: "muted", text: NOTE }), body);
  getJSON<CriticalPathResponse>("critical_path", { ...windowParams(host.sel), limit: PAGE }, host.signal).then(
    (data) => {
      if (host.signal.aborted) return;
      body.replaceWith(data.steps.length ? pathTable(host.store, data) : h("p", { class: "muted", id: "cp-none", text: "No critical path: this window's digest has none (no steps, or a digest made before the dependency graph)." }));
      el.dataset.state = "loaded";
    },
    (err) => {
      if (host.signal.aborted || (err as Error).name === "AbortError") return;
      body.replaceWith(h("p", { class: "notice error", text: `Critical path: ${errorText(err)}` }));
      el.dataset.state = "error";
    },
  );
  return el;
}

function offsetsText(data: CrossRankPathResponse): string {
  const moved = data.clock_offsets.filter((o) => o.offset_ns !== 0);
  const alone = data.clock_offsets.filter((o) => !o.aligned).map((o) => o.rank);
  const parts = [moved.length ? `Clock offsets applied: ${moved.map((o) => `rank ${o.rank} ${o.offset_ns > 0 ? "+" : "−"}${(Math.abs(o.offset_ns) / 1000).toFixed(1)} µs`).join(", ")}` : "The ranks' clocks agree at the collectives: no offset applied"];
  if (alone.length) parts.push(`not aligned (no collective shared): rank ${alone.join(", ")}`);
  return `${parts.join("; ")}.`;
}

/** "Critical path across ranks": which rank held each step (links open that rank), and the offsets applied. */
export function crossRankPathCard(host: ViewHost, cl: ClusterResponse): HTMLElement {
  const body = h("p", { class: "muted", text: "Following the path across the ranks…" });
  const el = h("section", { class: "card", id: "cp-ranks", "data-state": "loading" }, h("h3", { class: "section-title", text: "Critical path across ranks" }), body);
  const worker = new Map(cl.per_rank.map((row) => [row.rank, row.worker]));
  const rankButton = (rank: number, text: string) => {
    const name = worker.get(rank);
    if (!name) return h("span", { text });
    const button = h("button", { type: "button", class: "button link", "data-rank": String(rank), title: `Open rank ${rank} (${name})` }, text);
    button.onclick = () => openRank(host, name, cl.window_index);
    return button;
  };
  getJSON<CrossRankPathResponse>("critical_path_ranks", { run: host.sel.run, window_index: String(cl.window_index), limit: "1" }, host.signal).then(
    (data) => {
      if (host.signal.aborted) return;
      if (!data.steps.length) {
        body.replaceWith(h("p", { class: "muted", id: "cp-ranks-none", text: "No step could be followed across the ranks (no collective matched on every rank)." }));
      } else {
        const rows = data.steps.slice(0, STEPS_SHOWN).map((step) =>
          h(
            "tr",
            { "data-step": String(step.step), "data-held-by": String(step.held_by ?? -1) },
            h("td", { class: "num", text: String(step.step) }),
            h("td", { class: "num", text: ms(step.dur_ns) }),
            h("td", {}, step.held_by === null ? h("span", { text: "–" }) : rankButton(step.held_by, `rank ${step.held_by}`)),
            h("td", {}, ...step.by_rank.slice(0, RANKS_NAMED).map((r) => h("span", { class: "path-rank" }, rankButton(r.rank, `rank ${r.rank}`), ` ${ms(r.ns)} ms (${pct(r.share)}%) `)), step.by_rank.length > RANKS_NAMED ? h("span", { class: "muted", text: `+${step.by_rank.length - RANKS_NAMED} ranks` }) : null),
          ),
        );
        const table = h("table", { class: "data-table", id: "cp-ranks-table" }, h("thead", {}, h("tr", {}, ...["Step", "Step (ms)", "Held by", "Ranks on the path (time, share)"].map((t) => h("th", { text: t })))), h("tbody", {}, ...rows));
        body.replaceWith(h("div", {}, h("p", { class: "muted", text: "Which rank's own work and transfers held each step, after aligning the ranks' clocks through the collectives (a collective ends together on every rank)." }), h("div", { class: "table-wrap" }, table), h("p", { class: "muted", id: "cp-offsets", text: offsetsText(data) })));
      }
      el.dataset.state = "loaded";
    },
    (err) => {
      if (host.signal.aborted || (err as Error).name === "AbortError") return;
      body.replaceWith(h("p", { class: "notice error", text: `Critical path across ranks: ${errorText(err)}` }));
      el.dataset.state = "error";
    },
  );
  return el;
}
