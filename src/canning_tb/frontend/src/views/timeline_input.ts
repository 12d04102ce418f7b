// Mouse and keyboard on the Timeline canvas, in the habits of Perfetto and chrome://tracing: wheel
// zooms at the pointer (shift+wheel pans), W/S zoom, A/D pan, drag pans, shift+drag or a drag on the
// ruler selects a range, a click selects, F fits (to the selected range, else the whole window), Esc
// clears the selection.
import { GUTTER } from "./timeline_draw";

export interface TimelineActions {
  /** zoom by `factor` (< 1 = in) around the pixel x */
  zoom(factor: number, x: number): void;
  /** pan by `dx` pixels (positive = later) */
  pan(dx: number): void;
  /** the drag finished a pan (the state can be written now) */
  settle(): void;
  click(x: number, y: number): void;
  selectRange(x0: number, x1: number, done: boolean): void;
  fit(): void;
  clear(): void;
  /** whether the canvas y is on the ruler (it stays at the top of the scrolled view) */
  onRuler(y: number): boolean;
}

const DRAG_PX = 3;

function pointer(canvas: HTMLCanvasElement, event: MouseEvent): [number, number] {
  const rect = canvas.getBoundingClientRect();
  return [event.clientX - rect.left, event.clientY - rect.top];
}

function onDrag(canvas: HTMLCanvasElement, actions: TimelineActions): void {
  canvas.addEventListener("mousedown", (down) => {
    if (down.button !== 0) return;
    const [x0, y0] = pointer(canvas, down);
    const selecting = down.shiftKey || actions.onRuler(y0);
    let last = x0;
    let moved = false;
    const move = (event: MouseEvent) => {
      const [x] = pointer(canvas, event);
      if (!moved && Math.abs(x - x0) < DRAG_PX) return;
      moved = true;
      if (selecting) actions.selectRange(Math.max(GUTTER, x0), Math.max(GUTTER, x), false);
      else actions.pan(last - x);
      last = x;
    };
    const up = (event: MouseEvent) => {
      window.removeEventListener("mousemove", move);
      window.removeEventListener("mouseup", up);
      const [x, y] = pointer(canvas, event);
      if (!moved) actions.click(x, y);
      else if (selecting) actions.selectRange(Math.max(GUTTER, x0), Math.max(GUTTER, x), true);
      else actions.settle();
    };
    window.addEventListener("mousemove", move);
    window.addEventListener("mouseup", up);
    down.preventDefault();
  });
}

function onKeys(target: HTMLElement, canvas: HTMLCanvasElement, actions: TimelineActions, signal: AbortSignal): void {
  let lastX = GUTTER + (canvas.clientWidth - GUTTER) / 2;
  canvas.addEventListener("mousemove", (event) => {
    lastX = pointer(canvas, event)[0];
  });
  const keys: Record<string, () => void> = {
    w: () => actions.zoom(0.8, lastX),
    s: () => actions.zoom(1.25, lastX),
    a: () => actions.pan(-(canvas.clientWidth - GUTTER) * 0.1),
    d: () => actions.pan((canvas.clientWidth - GUTTER) * 0.1),
    f: () => actions.fit(),
    escape: () => actions.clear(),
  };
  const handler = (event: KeyboardEvent) => {
    const tag = (event.target as HTMLElement | null)?.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || event.ctrlKey || event.metaKey || event.altKey) return;
    const act = keys[event.key.toLowerCase()];
    if (!act) return;
    act();
    if (event.key.toLowerCase() !== "f" && event.key !== "Escape") actions.settle();
    event.preventDefault();
  };
  target.ownerDocument.addEventListener("keydown", handler);
  signal.addEventListener("abort", () => target.ownerDocument.removeEventListener("keydown", handler));
}

export function attachInput(target: HTMLElement, canvas: HTMLCanvasElement, actions: TimelineActions, signal: AbortSignal): void {
  let settleTimer = 0;
  canvas.addEventListener(
    "wheel",
    (event) => {
      event.preventDefault();
      const [x] = pointer(canvas, event);
      if (event.shiftKey) actions.pan(event.deltaY || event.deltaX);
      else actions.zoom(Math.pow(1.0015, event.deltaY), Math.max(GUTTER, x));
      window.clearTimeout(settleTimer);
      settleTimer = window.setTimeout(() => actions.settle(), 200);
    },
    { passive: false },
  );
  onDrag(canvas, actions);
  onKeys(target, canvas, actions, signal);
}
