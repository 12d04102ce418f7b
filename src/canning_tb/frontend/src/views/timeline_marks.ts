// What the Timeline draws over the slices: the selected slice (a thick outline), its flow links (arrows
// to outlined slices), the peers of a selected collective on every rank (the last to arrive marked),
// the selected range, a marked instant and the pointer's value on a counter lane. Drawn inside the data
// area only, never over the lanes' labels.
import type { TimelineBrief } from "../api";
import { GUTTER, RULER, toX, type Marks, type Viewport } from "./timeline_draw";
import { spanText, timeText } from "./timeline_ruler";
import type { Lane, RankView } from "./timeline_model";

interface Placed {
  x: number;
  y: number;
  w: number;
  h: number;
}

/** Where an event (rank, track, depth, start, dur) is drawn, or null when its lane is not shown. */
function place(view: Viewport, ranks: RankView[], lanes: Lane[], rank: number, slice: Pick<TimelineBrief, "track" | "depth" | "start_ns" | "dur_ns">): Placed | null {
  const lane = lanes.find((l) => l.kind === "row" && l.rank === rank && l.track === slice.track && l.depth === slice.depth);
  if (!lane) return null;
  const shift = ranks[rank].shift;
  const x = toX(view, slice.start_ns + shift);
  return { x, y: view.top + lane.y + 1, w: Math.max(2, toX(view, slice.start_ns + slice.dur_ns + shift) - x), h: lane.height - 2 };
}

function outline(ctx: CanvasRenderingContext2D, box: Placed, colour: string, width: number): void {
  ctx.strokeStyle = colour;
  ctx.lineWidth = width;
  ctx.strokeRect(box.x - 1, box.y - 1, box.w + 2, box.h + 2);
  ctx.lineWidth = 1;
}

function arrow(ctx: CanvasRenderingContext2D, from: Placed, to: Placed): void {
  const [x0, y0, x1, y1] = [from.x, from.y + from.h / 2, to.x, to.y + to.h / 2];
  ctx.strokeStyle = "#37474f";
  ctx.fillStyle = "#37474f";
  ctx.beginPath();
  ctx.moveTo(x0, y0);
  ctx.bezierCurveTo((x0 + x1) / 2, y0, (x0 + x1) / 2, y1, x1, y1);
  ctx.stroke();
  ctx.beginPath();
  ctx.moveTo(x1, y1);
  ctx.lineTo(x1 - 6, y1 - 4);
  ctx.lineTo(x1 - 6, y1 + 4);
  ctx.fill();
}

function drawInstant(ctx: CanvasRenderingContext2D, view: Viewport, at: number, height: number): void {
  const x = Math.round(toX(view, at)) + 0.5;
  ctx.strokeStyle = "#c62828";
  ctx.setLineDash([4, 3]);
  ctx.beginPath();
  ctx.moveTo(x, RULER);
  ctx.lineTo(x, height);
  ctx.stroke();
  ctx.setLineDash([]);
}

function drawCursor(ctx: CanvasRenderingContext2D, view: Viewport, cursor: NonNullable<Marks["cursor"]>): void {
  const top = view.top + cursor.lane.y;
  ctx.strokeStyle = "#37474f";
  ctx.beginPath();
  ctx.moveTo(cursor.x + 0.5, top);
  ctx.lineTo(cursor.x + 0.5, top + cursor.lane.height);
  ctx.stroke();
  ctx.font = "11px system-ui, sans-serif";
  const width = ctx.measureText(cursor.text).width + 8;
  const x = cursor.x + 6 + width > GUTTER + view.width ? cursor.x - 6 - width : cursor.x + 6;
  ctx.fillStyle = "rgba(255,255,255,0.9)";
  ctx.fillRect(x, top + cursor.lane.height / 2 - 8, width, 16);
  ctx.fillStyle = "#212121";
  ctx.fillText(cursor.text, x + 4, top + cursor.lane.height / 2);
}

/** Draws the marks; returns how many search matches were drawn in sight. */
export function drawMarks(ctx: CanvasRenderingContext2D, view: Viewport, ranks: RankView[], lanes: Lane[], marks: Marks, selectedSlice: TimelineBrief | null, height: number): number {
  ctx.save();
  ctx.beginPath();
  ctx.rect(GUTTER, RULER, view.width, height - RULER);
  ctx.clip();
  const hits = drawHits(ctx, view, ranks, lanes, marks);
  drawAll(ctx, view, ranks, lanes, marks, selectedSlice, height);
  ctx.restore();
  return hits;
}

/** Every search match in sight: a yellow fill under a dark outline, so a match one pixel wide shows. */
function drawHits(ctx: CanvasRenderingContext2D, view: Viewport, ranks: RankView[], lanes: Lane[], marks: Marks): number {
  let drawn = 0;
  for (const [rank, hits] of marks.hits) {
    for (const hit of hits) {
      const box = place(view, ranks, lanes, rank, hit);
      if (!box || box.x + box.w < GUTTER || box.x > GUTTER + view.width || box.y + box.h < RULER || box.y > view.height) continue;
      ctx.fillStyle = "rgba(255,235,59,0.55)";
      ctx.fillRect(box.x, box.y, box.w, box.h);
      outline(ctx, box, "#f9a825", 2);
      drawn++;
    }
  }
  return drawn;
}

/** The user's markers (a line each, numbered on the ruler) and the measured range's length: drawn
 * after the ruler, which would cover their labels. */
export function drawUserMarks(ctx: CanvasRenderingContext2D, view: Viewport, marks: Marks, height: number): void {
  ctx.font = "10px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  marks.user.forEach((at, i) => {
    const x = Math.round(toX(view, at)) + 0.5;
    if (x < GUTTER || x > GUTTER + view.width) return;
    ctx.strokeStyle = "#1565c0";
    ctx.beginPath();
    ctx.moveTo(x, RULER - 10);
    ctx.lineTo(x, height);
    ctx.stroke();
    const label = `M${i + 1} ${timeText(at)}`;
    const w = ctx.measureText(label).width + 6;
    const left = x + w > GUTTER + view.width ? x - w : x;
    ctx.fillStyle = "#1565c0";
    ctx.fillRect(left, RULER - 11, w, 11);
    ctx.fillStyle = "#ffffff";
    ctx.fillText(label, left + 3, RULER - 5.5);
  });
  if (marks.range) {
    const [lo, hi] = marks.range;
    const x0 = Math.max(GUTTER, toX(view, lo));
    const x1 = Math.min(GUTTER + view.width, toX(view, hi));
    if (x1 <= x0) return;
    const label = `Δ ${spanText(hi - lo)}`;
    const w = ctx.measureText(label).width + 6;
    const left = Math.max(GUTTER, Math.min(GUTTER + view.width - w, (x0 + x1) / 2 - w / 2));
    ctx.fillStyle = "#e65100";
    ctx.fillRect(left, RULER + 1, w, 12);
    ctx.fillStyle = "#ffffff";
    ctx.fillText(label, left + 3, RULER + 7);
  }
}

function drawAll(ctx: CanvasRenderingContext2D, view: Viewport, ranks: RankView[], lanes: Lane[], marks: Marks, selectedSlice: TimelineBrief | null, height: number): void {
  if (marks.instant !== null) drawInstant(ctx, view, marks.instant, height);
  if (marks.cursor) drawCursor(ctx, view, marks.cursor);
  if (marks.range) {
    const x0 = Math.max(GUTTER, toX(view, marks.range[0]));
    const x1 = Math.min(GUTTER + view.width, toX(view, marks.range[1]));
    ctx.fillStyle = "rgba(245,124,0,0.12)";
    ctx.fillRect(x0, RULER, Math.max(1, x1 - x0), height - RULER);
  }
  for (const [rank, peer] of marks.peers) {
    const box = place(view, ranks, lanes, rank, peer);
    if (!box) continue;
    outline(ctx, box, peer.last ? "#c62828" : "#f57c00", 2);
    if (peer.last) {
      ctx.fillStyle = "#c62828";
      ctx.fillText("last", box.x + box.w + 4, box.y + box.h / 2);
    }
  }
  if (!marks.selected || !selectedSlice) return;
  const from = place(view, ranks, lanes, marks.selected.rank, selectedSlice);
  if (!from) return;
  for (const link of marks.links) {
    const to = place(view, ranks, lanes, marks.selected.rank, link);
    if (!to) continue;
    outline(ctx, to, "#37474f", 1);
    arrow(ctx, from, to);
  }
  // black over white: seen on light and dark slices alike
  outline(ctx, { x: from.x + 1, y: from.y + 1, w: from.w - 2, h: from.h - 2 }, "#ffffff", 1);
  outline(ctx, from, "#000000", 2);
}
