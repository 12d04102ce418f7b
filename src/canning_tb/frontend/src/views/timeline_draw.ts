// Drawing the Timeline on a <canvas>: the ruler, each lane's label, the slices (merged items paler,
// names elided to fit), steps, counter curves, the selection, peers and flow arrows. Pixel layout
// only: every number drawn comes from the server.
import type { TimelineBrief, TimelinePeer, TimelineTile } from "../api";
import { counterText, laneSeries } from "./timeline_counters";
import { stepsNote, type Lane, type RankView } from "./timeline_model";

export const GUTTER = 200;
export const RULER = 24;

export interface Viewport {
  lo: number;
  hi: number;
  /** width of the data area in CSS pixels */
  width: number;
  /** canvas y of the lanes' y = 0 (the ruler's height less the vertical scroll) */
  top: number;
  /** the canvas' height: lanes below it are not drawn */
  height: number;
}

function visible(view: Viewport, lane: Lane): boolean {
  return view.top + lane.y + lane.height > RULER && view.top + lane.y < view.height;
}

export interface Marks {
  selected: { rank: number; event: number } | null;
  /** peers of the selected collective, per rank index */
  peers: Map<number, TimelinePeer>;
  links: TimelineBrief[];
  range: [number, number] | null;
  /** an instant marked on the axis (a link's "here": a memory peak, a finding's time) */
  instant: number | null;
  /** the pointer over a counter lane: where, and the value there */
  cursor: { x: number; lane: Lane; text: string } | null;
  /** the search's matches in the visible range, per rank index (drawn highlighted) */
  hits: Map<number, SearchHit[]>;
  /** the user's markers on the axis (ns) */
  user: number[];
}

export interface SearchHit {
  event: number;
  track: number;
  depth: number;
  start_ns: number;
  dur_ns: number;
}

export function noMarks(): Marks {
  return { selected: null, peers: new Map(), links: [], range: null, instant: null, cursor: null, hits: new Map(), user: [] };
}

export function toX(view: Viewport, ns: number): number {
  return GUTTER + ((ns - view.lo) / (view.hi - view.lo)) * view.width;
}

export function toNs(view: Viewport, x: number): number {
  return view.lo + ((x - GUTTER) / view.width) * (view.hi - view.lo);
}

const colours = new Map<string, string>();

/** One colour per name, the same at every zoom and on every rank. */
export function colourOf(name: string): string {
  let colour = colours.get(name);
  if (!colour) {
    let hash = 2166136261;
    for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 16777619);
    colour = `hsl(${(hash >>> 0) % 360}, 55%, ${62 + ((hash >>> 9) % 14)}%)`;
    colours.set(name, colour);
  }
  return colour;
}

const widths = new Map<string, number>();

/** The text's width in the current font, measured once per font and text. */
function widthOf(ctx: CanvasRenderingContext2D, text: string): number {
  const key = `${ctx.font}\u0000${text}`;
  let width = widths.get(key);
  if (width === undefined) {
    width = ctx.measureText(text).width;
    if (widths.size > 50_000) widths.clear();
    widths.set(key, width);
  }
  return width;
}

/** The longest prefix of `text` (with "…") that fits in `width` pixels, or "" if none does: a guess
 * in proportion to the full width, then corrected a character at a time. */
export function elide(ctx: CanvasRenderingContext2D, text: string, width: number): string {
  if (width < 14) return "";
  const full = widthOf(ctx, text);
  if (full <= width) return text;
  let keep = Math.floor((text.length * width) / full);
  while (keep > 0 && widthOf(ctx, `${text.slice(0, keep)}…`) > width) keep--;
  return keep ? `${text.slice(0, keep)}…` : "";
}

function laneKey(rank: number, track: number, depth: number): string {
  return `${rank}:${track}:${depth}`;
}

/** lane index by (rank, track, depth), for placing tile items. */
export function laneIndex(lanes: Lane[]): Map<string, number> {
  const index = new Map<string, number>();
  lanes.forEach((lane, i) => {
    if (lane.kind === "row") index.set(laneKey(lane.rank, lane.track, lane.depth), i);
  });
  return index;
}

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
  item: number;
}

/** Each drawn item's box per rank (for hit tests), computed while drawing. */
export type Boxes = Map<number, Box[]>;

/** A tile's items ordered by name (once per tile): the fill pass sets each colour once. */
const byName = new WeakMap<TimelineTile, Uint32Array>();

function nameOrder(tile: TimelineTile): Uint32Array {
  let order = byName.get(tile);
  if (!order) {
    order = Uint32Array.from({ length: tile.header.count }, (_, i) => i).sort((a, b) => tile.name[a] - tile.name[b]);
    byName.set(tile, order);
  }
  return order;
}

/** Where each item of the tile lands, for those in sight (indexed by item; undefined elsewhere). */
function placeItems(view: Viewport, rankIndex: number, rank: RankView, tile: TimelineTile, lanes: Lane[], index: Map<string, number>): (Box | undefined)[] {
  const rowLane = tile.header.rows.map(([track, depth]) => index.get(laneKey(rankIndex, track, depth)) ?? -1);
  const placed: (Box | undefined)[] = new Array(tile.header.count);
  const right = GUTTER + view.width;
  for (let i = 0; i < tile.header.count; i++) {
    const laneAt = rowLane[tile.row[i]];
    if (laneAt < 0 || !visible(view, lanes[laneAt])) continue;
    const from = toX(view, tile.start[i] + rank.shift);
    const to = toX(view, tile.start[i] + tile.dur[i] + rank.shift);
    if (to < GUTTER || from > right) continue;
    const x = Math.max(GUTTER, from);
    const lane = lanes[laneAt];
    placed[i] = { x, y: view.top + lane.y + 1, w: Math.max(1, Math.min(right, to) - x), h: lane.height - 2, item: i };
  }
  return placed;
}

function drawTile(ctx: CanvasRenderingContext2D, view: Viewport, rankIndex: number, rank: RankView, tile: TimelineTile,
  lanes: Lane[], index: Map<string, number>): Box[] {
  const placed = placeItems(view, rankIndex, rank, tile, lanes, index);
  let colourName = -1;
  for (const i of nameOrder(tile)) {
    const box = placed[i];
    if (!box) continue;
    if (tile.name[i] !== colourName) {
      colourName = tile.name[i];
      ctx.fillStyle = colourOf(tile.header.names[colourName]);
    }
    ctx.globalAlpha = tile.count[i] > 1 ? 0.55 : 1;
    ctx.fillRect(box.x, box.y, box.w, box.h);
  }
  ctx.globalAlpha = 1;
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  ctx.fillStyle = "#212121";
  const boxes = placed.filter((box): box is Box => box !== undefined);
  for (const box of boxes) {
    if (box.w <= 20) continue;
    const name = tile.header.names[tile.name[box.item]];
    const count = tile.count[box.item];
    const label = elide(ctx, count > 1 ? `${name} (+${count - 1})` : name, box.w - 4);
    if (label) ctx.fillText(label, box.x + 2, box.y + box.h / 2);
  }
  return boxes;
}

function drawSteps(ctx: CanvasRenderingContext2D, view: Viewport, rank: RankView, lane: Lane): void {
  const top = view.top;
  const note = stepsNote(rank.tracks);
  if (note) { // the row says why it has no step, rather than a "Step 0" the file never marked
    ctx.fillStyle = "#757575";
    ctx.font = "italic 11px system-ui, sans-serif";
    ctx.fillText(elide(ctx, note, view.width - 8), GUTTER + 4, top + lane.y + lane.height / 2);
    ctx.font = "11px system-ui, sans-serif";
    return;
  }
  rank.tracks.steps.forEach((step, i) => {
    const x = Math.max(GUTTER, toX(view, step.start_ns + rank.shift));
    const end = Math.min(GUTTER + view.width, toX(view, step.start_ns + step.dur_ns + rank.shift));
    if (end <= x) return;
    ctx.fillStyle = i % 2 ? "#ffe0b2" : "#ffcc80";
    ctx.fillRect(x, top + lane.y + 1, end - x, lane.height - 2);
    ctx.fillStyle = "#212121";
    ctx.fillText(elide(ctx, `Step ${step.number}`, end - x - 4), x + 2, top + lane.y + lane.height / 2);
  });
}

/** The scale's top at the lane's top left ("2.6 GB"), over the curve. */
function drawScale(ctx: CanvasRenderingContext2D, view: Viewport, lane: Lane, text: string): void {
  ctx.font = "10px system-ui, sans-serif";
  ctx.fillStyle = "rgba(255,255,255,0.8)";
  const y = view.top + lane.y + 7;
  ctx.fillRect(GUTTER + 2, y - 6, widthOf(ctx, text) + 4, 12);
  ctx.fillStyle = "#424242";
  ctx.fillText(text, GUTTER + 4, y);
  ctx.font = "11px system-ui, sans-serif";
}

/** A counter as a step curve filled down to the lane's bottom, scaled to `peak`. */
function drawCurve(ctx: CanvasRenderingContext2D, view: Viewport, shift: number, lane: Lane, ts: number[], values: number[], peak: number, colour: string): void {
  if (!ts.length) return;
  const bottom = view.top + lane.y + lane.height - 1;
  const yOf = (value: number) => bottom - (value / (peak > 0 ? peak : 1)) * (lane.height - 4);
  ctx.beginPath();
  ctx.moveTo(toX(view, ts[0] + shift), bottom);
  ts.forEach((t, i) => {
    const x = toX(view, t + shift);
    if (i > 0) ctx.lineTo(x, yOf(values[i - 1]));
    ctx.lineTo(x, yOf(values[i]));
  });
  ctx.lineTo(GUTTER + view.width, yOf(values[values.length - 1]));
  ctx.lineTo(GUTTER + view.width, bottom);
  ctx.fillStyle = colour;
  ctx.fill();
}

/** A counter lane: its curve and its scale (the top of the lane is the highest value in sight, for
 * memory; the series' highest in the window, for the NPU's counters). */
function drawCounter(ctx: CanvasRenderingContext2D, view: Viewport, rank: RankView, lane: Lane): void {
  const series = laneSeries(rank, lane);
  if (!series) return;
  const measure = rank.counters?.memory[lane.counter]?.measure;
  const colour = lane.kind === "npu" ? "rgba(0,137,123,0.35)" : measure === "allocated" ? "rgba(33,150,243,0.35)" : "rgba(156,39,176,0.25)";
  drawCurve(ctx, view, rank.shift, lane, series.ts, series.values, series.top, colour);
  if (series.ts.length) drawScale(ctx, view, lane, counterText(series.top, series.unit));
}

/** Lanes' backgrounds, contents and labels; returns the boxes drawn per rank. */
export function drawLanes(ctx: CanvasRenderingContext2D, view: Viewport, ranks: RankView[], lanes: Lane[]): Boxes {
  const index = laneIndex(lanes);
  const boxes: Boxes = new Map();
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  const shown = lanes.filter((lane) => visible(view, lane));
  for (const lane of shown) {
    const rank = ranks[lane.rank];
    if (lane.kind === "rank") {
      ctx.fillStyle = "#eeeeee";
      ctx.fillRect(0, view.top + lane.y, GUTTER + view.width, lane.height);
    } else if (lane.kind === "steps") drawSteps(ctx, view, rank, lane);
    else if (lane.kind === "counter" || lane.kind === "npu") drawCounter(ctx, view, rank, lane);
  }
  ranks.forEach((rank, i) => {
    if (rank.tile) boxes.set(i, drawTile(ctx, view, i, rank, rank.tile, lanes, index));
  });
  ctx.fillStyle = "#fafafa";
  ctx.fillRect(0, RULER, GUTTER, view.height - RULER);
  for (const lane of shown) {
    if (!lane.label) continue;
    ctx.fillStyle = lane.kind === "rank" ? "#212121" : "#616161";
    ctx.font = lane.kind === "rank" ? "bold 12px system-ui, sans-serif" : "11px system-ui, sans-serif";
    const open = lane.kind === "rank" ? !ranks[lane.rank].collapsed
      : lane.kind === "group" ? ranks[lane.rank].openGroups.has(lane.group ?? "") : !ranks[lane.rank].folded.has(lane.track);
    const text = lane.kind === "rank" || lane.foldable ? `${open ? "▾" : "▸"} ${lane.label}` : lane.label;
    ctx.fillText(elide(ctx, text, GUTTER - 8), 4, view.top + lane.y + lane.height / 2);
  }
  return boxes;
}
