// What the Timeline draws over the slices: the selected slice, its flow links (arrows), the peers of a
// selected collective on every rank (the last to arrive marked), and the selected range.
import type { TimelineBrief } from "../api";
import { GUTTER, RULER, toX, type Marks, type Viewport } from "./timeline_draw";
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

export function drawMarks(ctx: CanvasRenderingContext2D, view: Viewport, ranks: RankView[], lanes: Lane[], marks: Marks, selectedSlice: TimelineBrief | null, height: number): void {
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
    if (to) arrow(ctx, from, to);
  }
  outline(ctx, from, "#000000", 2);
}
