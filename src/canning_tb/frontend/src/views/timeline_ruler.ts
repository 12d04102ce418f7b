// The Timeline's time axis: tick spacing, the ruler's labels and the grid. Labels carry the precision
// the zoom needs: times since the selected window's start, in the unit that fits; where a plain label
// would need more than three decimals (deep zoom far into a long window: 54 µs at 52.9 s), the first
// tick shows the whole time and the others the offset from it ("+5 µs"), so no two ticks read alike.
import { GUTTER, RULER, toX, type Viewport } from "./timeline_draw";

const UNITS: [number, string][] = [
  [1e9, "s"],
  [1e6, "ms"],
  [1e3, "µs"],
  [1, "ns"],
];

/** ns as text in the unit that fits its size, with the decimals a `resolution` (ns) needs. */
export function timeText(ns: number, resolution = 1000): string {
  if (ns === 0) return "0";
  const [size, unit] = UNITS.find(([size]) => Math.abs(ns) >= size) ?? UNITS[UNITS.length - 1];
  return `${(ns / size).toFixed(decimals(size, resolution))} ${unit}`;
}

/** A length (ns) with about four significant digits ("1.234 ms"). */
export function spanText(ns: number): string {
  return timeText(ns, Math.max(1, Math.abs(ns) / 1000));
}

/** Decimals of a value in units of `size` ns that show steps of `resolution` ns. */
function decimals(size: number, resolution: number): number {
  return Math.max(0, Math.min(9, Math.ceil(Math.log10(size / Math.max(1, resolution)) - 1e-9)));
}

/** Tick spacing: 1, 2 or 5 × a power of ten ns, about every 100 pixels. */
export function tickStep(view: Viewport): number {
  const raw = ((view.hi - view.lo) / view.width) * 100;
  const power = 10 ** Math.floor(Math.log10(Math.max(raw, 1)));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw) ?? 10 * power;
}

export interface Tick {
  ns: number;
  text: string;
}

/** The ticks in sight and their labels. */
export function rulerTicks(view: Viewport): Tick[] {
  const step = tickStep(view);
  const first = Math.ceil(view.lo / step) * step;
  const times: number[] = [];
  for (let t = first; t <= view.hi; t += step) times.push(t);
  const plain = times.every((t) => t === 0 || decimals(UNITS.find(([size]) => Math.abs(t) >= size)?.[0] ?? 1, step) <= 3);
  if (plain) return times.map((ns) => ({ ns, text: timeText(ns, step) }));
  return times.map((ns, i) => ({ ns, text: i === 0 ? timeText(ns, step) : `+${timeText(ns - first, step)}` }));
}

/** The vertical grid lines of the ticks, under the lanes. */
export function drawGrid(ctx: CanvasRenderingContext2D, view: Viewport, height: number): void {
  ctx.strokeStyle = "#ececec";
  for (const tick of rulerTicks(view)) {
    const x = Math.round(toX(view, tick.ns)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(x, RULER);
    ctx.lineTo(x, height);
    ctx.stroke();
  }
}

/** The ruler's band at the top of the canvas, drawn over the lanes; returns the labels drawn. */
export function drawRuler(ctx: CanvasRenderingContext2D, view: Viewport): string[] {
  const ticks = rulerTicks(view);
  ctx.fillStyle = "#f5f5f5";
  ctx.fillRect(0, 0, GUTTER + view.width, RULER);
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  ctx.fillStyle = "#9e9e9e";
  ctx.fillText("time since the window start", 4, RULER / 2);
  ctx.fillStyle = "#616161";
  for (const tick of ticks) {
    const x = Math.round(toX(view, tick.ns)) + 0.5;
    ctx.fillRect(x, RULER - 6, 1, 6);
    ctx.fillText(tick.text, x + 3, RULER / 2);
  }
  return ticks.map((tick) => tick.text);
}
