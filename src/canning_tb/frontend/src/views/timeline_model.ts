// The Timeline's data in the browser: each rank shown (its tracks, its shift on the common axis, its
// latest tile and counters) and the lanes drawn from them. Nothing here sums or counts events: the
// tiles, summaries and peers come computed from the server; this only places them.
import {
  getJSON,
  getTile,
  type Selection,
  type TimelineCounterInfo,
  type TimelineCountersResponse,
  type TimelineRank,
  type TimelineRanksResponse,
  type TimelineTile,
  type TimelineTrack,
  type TimelineTracksLoading,
  type TimelineTracksResponse,
} from "../api";

export interface RankView {
  sel: Selection;
  label: string;
  tracks: TimelineTracksResponse;
  /** ns added to this rank's window-relative times to place them on the common axis */
  shift: number;
  collapsed: boolean;
  /** tracks shown with their top row only */
  folded: Set<number>;
  tile: TimelineTile | null;
  counters: TimelineCountersResponse | null;
  /** NPU counter groups shown with their series (the others show their name only) */
  openGroups: Set<string>;
  /** the server is still reading or indexing this rank: its ruler and steps only */
  pending: boolean;
}

export type LaneKind = "rank" | "steps" | "row" | "counter" | "group" | "npu";

export interface Lane {
  kind: LaneKind;
  rank: number;
  label: string;
  y: number;
  height: number;
  /** row lanes: the (track, depth) they draw; counter lanes: the memory counter's index; npu lanes: the
   * NPU counter's id; group lanes: the group's key in `openGroups` */
  track: number;
  depth: number;
  counter: number;
  /** a track's first row whose other rows can be folded */
  foldable: boolean;
  group?: string;
}

export const ROW_HEIGHT = 17;
const RANK_HEIGHT = 20;
const COUNTER_HEIGHT = 36;
const NPU_HEIGHT = 28;

/** Groups of NPU counters open at first: few series in a physical unit (frequency, bandwidth, memory). */
export function openAtFirst(tracks: TimelineTracksResponse): Set<string> {
  const groups = new Map<string, TimelineCounterInfo[]>();
  for (const info of tracks.counters) groups.set(groupKey(info), [...(groups.get(groupKey(info)) ?? []), info]);
  const physical = new Set(["MHz", "bytes", "bytes/s"]);
  return new Set([...groups].filter(([, series]) => series.length <= 8 && series.some((s) => physical.has(s.unit))).map(([key]) => key));
}

function groupKey(info: TimelineCounterInfo): string {
  return `${info.device} · ${info.group}`;
}

function npuLanes(rank: RankView, index: number, push: (lane: Omit<Lane, "y">) => void): void {
  const base = { rank: index, track: -1, depth: -1, counter: -1, foldable: true };
  let last = "";
  for (const info of rank.tracks.counters) {
    const key = groupKey(info);
    if (key !== last) push({ ...base, kind: "group", label: key, height: ROW_HEIGHT, group: key });
    last = key;
    if (rank.openGroups.has(key)) {
      const unit = info.unit ? ` (${info.unit})` : "";
      push({ ...base, kind: "npu", label: `${info.name}${unit}`, height: NPU_HEIGHT, counter: info.id, foldable: false });
    }
  }
}

/** Where a kind of track comes in a rank's lanes: the device's streams first (where the time goes on an
 * accelerator, in sight without scrolling), then the host threads, then the Python call stacks. */
const TRACK_ORDER: Record<TimelineTrack["kind"], number> = { device: 0, host: 1, python: 2 };

/** A rank's tracks in the order they are drawn. */
export function trackOrder(tracks: TimelineTracksResponse): TimelineTrack[] {
  return tracks.tracks.map((track, i) => ({ track, i })).sort((a, b) => TRACK_ORDER[a.track.kind] - TRACK_ORDER[b.track.kind] || a.i - b.i).map(({ track }) => track);
}

/** Tracks shown folded at first (their top row only): the Python call stacks, tens of rows deep. */
export function foldedAtFirst(tracks: TimelineTracksResponse): Set<number> {
  return new Set(tracks.tracks.filter((track) => track.kind === "python" && track.rows.length > 1).map((track) => track.id));
}

/** Which tracks the user hides, pins (to the top of their rank, in the order pinned) or filters
 * for: keys "<rank>.<track id>"; `filter` holds terms separated by commas, a track shown when its
 * "rank N / name (kind)" holds any of them (case-insensitive). */
export interface TrackChoice {
  hidden: string[];
  pinned: string[];
  filter: string;
  /** with a search: only the tracks holding a match, per rank index (null: no such filter) */
  matches: Map<number, Set<number>> | null;
}

export const NO_CHOICE: TrackChoice = { hidden: [], pinned: [], filter: "", matches: null };

export function trackKey(rank: RankView, track: TimelineTrack): string {
  return `${rank.tracks.rank}.${track.id}`;
}

/** The text a track filter is matched against. */
export function trackText(rank: RankView, track: TimelineTrack): string {
  return `rank ${rank.tracks.rank} / ${track.name} (${track.kind})`.toLowerCase();
}

/** A rank's tracks as shown: the filter and the hidden ones left out, the pinned ones first. */
export function shownTracks(rank: RankView, choice: TrackChoice, index = 0): TimelineTrack[] {
  const terms = choice.filter.toLowerCase().split(",").map((term) => term.trim()).filter(Boolean);
  const hidden = new Set(choice.hidden);
  const matches = choice.matches?.get(index);
  const shown = trackOrder(rank.tracks).filter((track) => !hidden.has(trackKey(rank, track)) &&
    (!terms.length || terms.some((term) => trackText(rank, track).includes(term))) &&
    (!choice.matches || (matches?.has(track.id) ?? false)));
  const pinAt = (track: TimelineTrack) => {
    const at = choice.pinned.indexOf(trackKey(rank, track));
    return at < 0 ? choice.pinned.length : at;
  };
  return shown.map((track, i) => ({ track, i })).sort((a, b) => pinAt(a.track) - pinAt(b.track) || a.i - b.i).map(({ track }) => track);
}

/** Why a rank's Steps row shows no step ("" when it has steps): no ProfilerStep range, prof.step()
 * mark or CANN step in its files (the digest then takes the window as one step). */
export function stepsNote(tracks: TimelineTracksResponse): string {
  if (tracks.step_source === "window") return "no steps marked in this rank's files (no ProfilerStep range, prof.step() mark or CANN step): the window is taken as one step";
  if (!tracks.steps.length && tracks.step_source !== undefined) return "no steps in this rank's files (no ProfilerStep range, prof.step() mark or CANN step)";
  return "";
}

/** The lanes of every rank, top to bottom: a header, the steps, each track's rows, the counters. */
export function layout(ranks: RankView[], choice: TrackChoice = NO_CHOICE): Lane[] {
  const lanes: Lane[] = [];
  let y = 0;
  const push = (lane: Omit<Lane, "y">) => {
    lanes.push({ ...lane, y });
    y += lane.height;
  };
  ranks.forEach((rank, index) => {
    const base = { rank: index, track: -1, depth: -1, counter: -1, foldable: false };
    if (ranks.length > 1) push({ ...base, kind: "rank", label: rank.label, height: RANK_HEIGHT });
    push({ ...base, kind: "steps", label: stepsNote(rank.tracks) ? "Steps: none marked" : "Steps", height: ROW_HEIGHT });
    if (rank.collapsed) return;
    for (const track of shownTracks(rank, choice, index)) {
      const depths = rank.folded.has(track.id) ? 1 : track.rows.length;
      for (let depth = 0; depth < depths; depth++) {
        const first = depth === 0;
        const pin = first && choice.pinned.includes(trackKey(rank, track)) ? "★ " : "";
        push({ ...base, kind: "row", label: first ? `${pin}${track.name}` : "", height: ROW_HEIGHT, track: track.id, depth, foldable: first && track.rows.length > 1 });
      }
    }
    (rank.counters?.memory ?? []).forEach((counter, i) => {
      push({ ...base, kind: "counter", label: `${counter.device} ${counter.measure}`, height: COUNTER_HEIGHT, counter: i });
    });
    npuLanes(rank, index, push);
  });
  return lanes;
}

/** Each rank's shift against the selected one: by the clock, with their first steps aligned, or by the clock less
 * each rank's offset through the collectives (`clocks`: "<worker>/<window>" -> offset_ns, the cross-rank path's). */
export function shifts(ranks: TimelineRank[], selected: number, align: "clock" | "step" | "collectives", clocks?: Map<string, number>): number[] {
  const ref = ranks[selected];
  const off = (rank: TimelineRank) => (align === "collectives" ? clocks?.get(`${rank.worker}/${rank.window}`) ?? 0 : 0);
  return ranks.map((rank) =>
    align === "step" ? ref.first_step_ns - rank.first_step_ns : rank.offset_ns - ref.offset_ns - (off(rank) - off(ref)),
  );
}

/** The ranks to draw (those that can be read) and the errors of the others. */
export async function loadRanks(sel: Selection, all: boolean, signal: AbortSignal): Promise<{ ranks: TimelineRank[]; selected: number; errors: string[] }> {
  if (!all) return { ranks: [], selected: 0, errors: [] };
  const answer = await getJSON<TimelineRanksResponse>("timeline_ranks", { ...sel }, signal);
  const ranks = answer.ranks.filter((r) => r.error === undefined);
  const errors = answer.ranks.filter((r) => r.error !== undefined).map((r) => `rank ${r.rank}: ${r.error}`);
  const selected = ranks.findIndex((r) => r.worker === sel.worker && r.window === sel.window);
  return { ranks, selected: Math.max(0, selected), errors };
}

const POLL_MS = 200; // between asks; each ask itself waits up to a second on the server

/** A rank's tracks while the server still reads or indexes it: the ruler and steps it knows already. */
function pendingTracks(answer: TimelineTracksLoading): TimelineTracksResponse | null {
  if (answer.duration_ns === undefined || answer.start_ns === undefined) return null;
  return {
    run: answer.run, worker: answer.worker, window: answer.window, rank: answer.rank ?? 0, start_ns: answer.start_ns,
    duration_ns: answer.duration_ns, events: 0, tracks: [], steps: answer.steps ?? [], memory_devices: [], counters: [],
  };
}

export function progressText(answer: TimelineTracksLoading): string {
  return `${answer.stage}… (${answer.elapsed_s.toFixed(0)} s)`;
}

/** The window's tracks, asking again while the server is still reading or indexing it; with
 * `partial`, a pending answer (`pending: true`) as soon as the window's extent and steps are known. */
export async function loadTracks(sel: Selection, signal: AbortSignal, partial = false,
  progress: (text: string) => void = () => undefined): Promise<{ tracks: TimelineTracksResponse; pending: boolean }> {
  for (;;) {
    const answer = await getJSON<TimelineTracksResponse | TimelineTracksLoading>("timeline_tracks", { ...sel }, signal);
    if (!("loading" in answer)) return { tracks: answer, pending: false };
    const known = partial ? pendingTracks(answer) : null;
    if (known) return { tracks: known, pending: true };
    progress(progressText(answer));
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    if (signal.aborted) throw new DOMException("aborted", "AbortError");
  }
}

/** The tile and counters of one rank for the axis range [lo, hi] at `width` pixels. */
export async function refreshRank(rank: RankView, lo: number, hi: number, width: number, signal: AbortSignal): Promise<void> {
  const start = Math.floor(lo - rank.shift);
  const end = Math.max(start + 1, Math.ceil(hi - rank.shift));
  const params = { ...rank.sel, start_ns: String(start), end_ns: String(end), width: String(Math.max(1, Math.round(width))) };
  if (rank.collapsed || rank.pending) {
    rank.tile = null;
    return;
  }
  const [tile, counters] = await Promise.all([
    getTile(params, signal),
    rank.tracks.memory_devices.length || rank.tracks.counters.length ? getJSON<TimelineCountersResponse>("timeline_counters", params, signal) : Promise.resolve(null),
  ]);
  rank.tile = tile;
  rank.counters = counters;
}
