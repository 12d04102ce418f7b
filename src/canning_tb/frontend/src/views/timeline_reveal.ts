// Where a jump lands (a double-click in another view, a linked event, a peer, a search match): the
// folds to open so the target's row is drawn, the time range and the vertical scroll that bring the
// target and its linked events into sight. Pixel arithmetic only.
import type { Viewport } from "./timeline_draw";
import type { Lane, RankView } from "./timeline_model";

export const MIN_SPAN = 1000; // ns

/** An event to bring into sight: its rank, its row and its time (window-relative ns). */
export interface Target {
  rank: number;
  track: number;
  depth: number;
  start_ns: number;
  dur_ns: number;
}

/** Linked events further away than this (or than 100 × the target's duration) are not fitted into the
 * view with it: the arrow to them leaves the canvas instead. */
const LINK_REACH_NS = 20_000_000;

/** A slice narrower than this many pixels is zoomed into. */
const MIN_PX = 3;

/** Opens what hides the targets' rows (a collapsed rank, a folded track); whether anything opened. */
export function unfold(ranks: RankView[], targets: Target[]): boolean {
  let changed = false;
  for (const target of targets) {
    const rank = ranks[target.rank];
    if (!rank) continue;
    if (rank.collapsed) [rank.collapsed, changed] = [false, true];
    if (target.depth > 0 && rank.folded.delete(target.track)) changed = true;
  }
  return changed;
}

/** The linked events near enough to the target to be shown with it. */
export function nearLinks(target: Target, linked: Target[]): Target[] {
  const reach = Math.max(LINK_REACH_NS, 100 * target.dur_ns);
  const end = target.start_ns + target.dur_ns;
  return linked.filter((l) => l.rank === target.rank && Math.max(end, l.start_ns + l.dur_ns) - Math.min(target.start_ns, l.start_ns) <= reach);
}

/** The range to show (axis ns), or null to keep the current one: kept when it holds the target and its
 * near links and the target is wide enough to see; else the target with some context around it. */
export function revealRange(view: Viewport, shift: number, target: Target, linked: Target[]): [number, number] | null {
  const items = [target, ...nearLinks(target, linked)];
  const lo = Math.min(...items.map((i) => i.start_ns)) + shift;
  const hi = Math.max(...items.map((i) => i.start_ns + i.dur_ns)) + shift;
  const span = view.hi - view.lo;
  if (lo >= view.lo && hi <= view.hi && (target.dur_ns * view.width) / span >= MIN_PX) return null;
  const wanted = Math.max(MIN_SPAN, target.dur_ns * 3, Math.min(span, target.dur_ns * 50), (hi - lo) * 1.25);
  const middle = (lo + hi) / 2;
  return [middle - wanted / 2, middle + wanted / 2];
}

function laneOf(lanes: Lane[], t: Target): Lane | undefined {
  return lanes.find((l) => l.kind === "row" && l.rank === t.rank && l.track === t.track && l.depth === t.depth);
}

/** The lanes' scroll offset that shows the target's row and its linked events' rows (all of them when
 * they fit in `visible` pixels, moving as little as it can; else the target's row in the middle). */
export function revealScroll(lanes: Lane[], visible: number, current: number, target: Target, linked: Target[]): number {
  const main = laneOf(lanes, target);
  if (!main) return current;
  const rows = [main, ...linked.map((l) => laneOf(lanes, l)).filter((l): l is Lane => !!l)];
  const top = Math.min(...rows.map((l) => l.y));
  const bottom = Math.max(...rows.map((l) => l.y + l.height));
  if (bottom - top <= visible) return Math.max(0, Math.min(top, Math.max(current, bottom - visible)));
  return Math.max(0, main.y + main.height / 2 - visible / 2);
}
