// Mouse and keyboard on the Timeline canvas, as Perfetto and chrome://tracing have them (the help
// panel, timeline_help.ts, lists them): W/S zoom at the pointer and A/D pan (Shift: faster); Ctrl (or
// ⌘, or Alt as in chrome://tracing) + wheel zooms at the pointer; the wheel scrolls the tracks up and
// down, Shift + wheel or a sideways swipe pans; a drag pans, Shift + drag or a drag on the ruler
// selects a range; a click selects a slice; F fits the selection (slice, else range, else the
// window), 0 / Z the whole window; [ and ] follow the selected slice's earlier / later linked event;
// / goes to the search (matches shown as you type; Enter: next match, Shift + Enter: previous); M
// puts a marker at the pointer (Shift + M removes them all); Esc clears the selection; ? opens the help.
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
  /** the whole window */
  reset(): void;
  clear(): void;
  /** select the selected slice's linked event before (-1) or after (1) it */
  follow(direction: 1 | -1): void;
  focusSearch(): void;
  toggleHelp(): void;
  /** a marker at the pixel x; `clear`: remove every marker */
  mark(x: number, clear: boolean): void;
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

/** The keys: what each does, and whether the view's range is written to the state after it. */
function keyMap(canvas: HTMLCanvasElement, actions: TimelineActions, lastX: () => number): Record<string, [(fast: boolean) => void, boolean]> {
  const step = (fast: boolean) => (canvas.clientWidth - GUTTER) * (fast ? 0.3 : 0.1);
  return {
    w: [(fast) => actions.zoom(fast ? 0.5 : 0.8, lastX()), true],
    s: [(fast) => actions.zoom(fast ? 2 : 1.25, lastX()), true],
    a: [(fast) => actions.pan(-step(fast)), true],
    d: [(fast) => actions.pan(step(fast)), true],
    f: [() => actions.fit(), false],
    "0": [() => actions.reset(), false],
    z: [() => actions.reset(), false],
    "[": [() => actions.follow(-1), false],
    "]": [() => actions.follow(1), false],
    "/": [() => actions.focusSearch(), false],
    "?": [() => actions.toggleHelp(), false],
    m: [(shift) => actions.mark(lastX(), shift), false],
    escape: [() => actions.clear(), false],
  };
}

function onKeys(target: HTMLElement, canvas: HTMLCanvasElement, actions: TimelineActions, signal: AbortSignal): void {
  let lastX = GUTTER + (canvas.clientWidth - GUTTER) / 2;
  canvas.addEventListener("mousemove", (event) => {
    lastX = pointer(canvas, event)[0];
  });
  const keys = keyMap(canvas, actions, () => lastX);
  const handler = (event: KeyboardEvent) => {
    const tag = (event.target as HTMLElement | null)?.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = keys[event.key.toLowerCase()];
    if (!key) return;
    key[0](event.shiftKey);
    if (key[1]) actions.settle();
    event.preventDefault();
  };
  target.ownerDocument.addEventListener("keydown", handler);
  signal.addEventListener("abort", () => target.ownerDocument.removeEventListener("keydown", handler));
}

/** Ctrl / ⌘ / Alt + wheel zooms; Shift + wheel and sideways swipes pan; the plain wheel is left to
 * the browser, which scrolls the tracks. */
function onWheel(canvas: HTMLCanvasElement, actions: TimelineActions): void {
  let settleTimer = 0;
  canvas.addEventListener(
    "wheel",
    (event) => {
      const zooming = event.ctrlKey || event.metaKey || event.altKey;
      const sideways = event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY);
      if (!zooming && !sideways) return;
      event.preventDefault();
      const [x] = pointer(canvas, event);
      if (zooming) actions.zoom(Math.pow(1.0015, event.deltaY), Math.max(GUTTER, x));
      else actions.pan(event.shiftKey ? event.deltaY || event.deltaX : event.deltaX);
      window.clearTimeout(settleTimer);
      settleTimer = window.setTimeout(() => actions.settle(), 200);
    },
    { passive: false },
  );
}

export function attachInput(target: HTMLElement, canvas: HTMLCanvasElement, actions: TimelineActions, signal: AbortSignal): void {
  onWheel(canvas, actions);
  onDrag(canvas, actions);
  onKeys(target, canvas, actions, signal);
}
