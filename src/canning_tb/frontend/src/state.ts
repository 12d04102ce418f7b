// The one app state: what is selected (run, worker, window, view) and each view's options. The
// shell and the views render from it and change it only through AppStore.update; the URL holds it,
// so a reload (or a shared link) opens the same view on the same selection.
//
// Where it is kept in the URL: the plugin runs in TensorBoard's iframe, whose own URL is lost on a
// reload, so the state goes into the top page's hash with TensorBoard's convention for plugin data,
// `#canning&p.canning.<key>=<value>` (what TensorBoard's experimental.GetURLPluginData reads). The
// iframe is same-origin; outside an iframe (tests, a bare page) its own hash is used.
import type { GroupBy } from "./api";

export type ViewId = "overview" | "operators" | "kernels" | "modules" | "memory" | "communication" | "timeline" | "compare";
export const VIEW_IDS: ViewId[] = ["overview", "operators", "kernels", "modules", "memory", "communication", "timeline", "compare"];
export const DEFAULT_VIEW: ViewId = "operators";

export interface OperatorsOptions {
  group: GroupBy;
  search: string;
  top: number;
  chart: "bar" | "pie";
  sort: string; // column key; "" = the view's default
  desc: boolean;
}
export interface KernelsOptions {
  group: "name" | "op";
  search: string;
}
export interface MemoryOptions {
  device: string; // "" = the first device other than CPU
  /** the selected time range, ns relative to the window start; null = the whole window */
  range: [number, number] | null;
}

export interface TimelineOptions {
  /** the visible time range, ns relative to the selected window's start; null = the whole window */
  range: [number, number] | null;
  /** the selected slice's event id in the selected window; -1 = none */
  event: number;
  search: string;
  /** every rank's window at this position side by side, or only the selected one */
  ranks: boolean;
  align: "clock" | "step";
  /** a name to open at its longest call (set by links from the other views, then resolved) */
  focus: string;
  /** what `focus` is: an event name, or a collective kind of the Communication view */
  focusBy: "name" | "collective";
}

/** Compare: the baseline window (the target is the selected window) and the tables' options. */
export interface CompareOptions {
  run: string; // "" = chosen by the view (the previous window, else another rank)
  worker: string;
  window: string;
  group: GroupBy;
  table: "operators" | "kernels" | "families";
  search: string;
}

export interface AppState {
  run: string;
  worker: string;
  window: string;
  view: ViewId;
  operators: OperatorsOptions;
  kernels: KernelsOptions;
  memory: MemoryOptions;
  timeline: TimelineOptions;
  compare: CompareOptions;
}

function defaultState(): AppState {
  return {
    run: "",
    worker: "",
    window: "",
    view: DEFAULT_VIEW,
    operators: { group: "name", search: "", top: 10, chart: "bar", sort: "", desc: true },
    kernels: { group: "name", search: "" },
    memory: { device: "", range: null },
    timeline: { range: null, event: -1, search: "", ranks: false, align: "clock", focus: "", focusBy: "name" },
    compare: { run: "", worker: "", window: "", group: "name", table: "operators", search: "" },
  };
}

// -- the URL --------------------------------------------------------------------------------------------

const PREFIX = "p.canning.";

/** The state as flat URL keys; values equal to the default are left out. */
function toParams(state: AppState): [string, string][] {
  const base = defaultState();
  const flat: [string, string, string][] = [
    ["run", state.run, base.run],
    ["worker", state.worker, base.worker],
    ["window", state.window, base.window],
    ["view", state.view, base.view],
    ["op.group", state.operators.group, base.operators.group],
    ["op.search", state.operators.search, base.operators.search],
    ["op.top", String(state.operators.top), String(base.operators.top)],
    ["op.chart", state.operators.chart, base.operators.chart],
    ["op.sort", state.operators.sort, base.operators.sort],
    ["op.desc", String(state.operators.desc), String(base.operators.desc)],
    ["k.group", state.kernels.group, base.kernels.group],
    ["k.search", state.kernels.search, base.kernels.search],
    ["mem.device", state.memory.device, base.memory.device],
    ["mem.range", state.memory.range ? state.memory.range.join("-") : "", ""],
    ["tl.range", state.timeline.range ? state.timeline.range.join("~") : "", ""],
    ["tl.event", String(state.timeline.event), String(base.timeline.event)],
    ["tl.search", state.timeline.search, base.timeline.search],
    ["tl.ranks", String(state.timeline.ranks), String(base.timeline.ranks)],
    ["tl.align", state.timeline.align, base.timeline.align],
    ["tl.focus", state.timeline.focus, base.timeline.focus],
    ["tl.focusby", state.timeline.focusBy, base.timeline.focusBy],
    ["cmp.run", state.compare.run, ""],
    ["cmp.worker", state.compare.worker, ""],
    ["cmp.window", state.compare.window, ""],
    ["cmp.group", state.compare.group, base.compare.group],
    ["cmp.table", state.compare.table, base.compare.table],
    ["cmp.search", state.compare.search, ""],
  ];
  return flat.filter(([, value, dflt]) => value !== dflt).map(([key, value]) => [key, value]);
}

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], dflt: T): T {
  return allowed.includes(value as T) ? (value as T) : dflt;
}

function parseRange(text: string | undefined): [number, number] | null {
  const match = /^(\d+)-(\d+)$/.exec(text ?? "");
  if (!match) return null;
  const [lo, hi] = [Number(match[1]), Number(match[2])];
  return lo <= hi ? [lo, hi] : null;
}

/** A timeline range "lo~hi" (ns, may be negative: other ranks can start before the selected one). */
function parseSpan(text: string | undefined): [number, number] | null {
  const match = /^(-?\d+)~(-?\d+)$/.exec(text ?? "");
  if (!match) return null;
  const [lo, hi] = [Number(match[1]), Number(match[2])];
  return lo < hi ? [lo, hi] : null;
}

function timelineFromParams(options: TimelineOptions, get: (key: string) => string | undefined): void {
  options.range = parseSpan(get("tl.range"));
  const event = Number(get("tl.event") ?? -1);
  options.event = Number.isInteger(event) && event >= 0 ? event : -1;
  options.search = get("tl.search") ?? "";
  options.ranks = get("tl.ranks") === "true";
  options.align = oneOf(get("tl.align"), ["clock", "step"] as const, options.align);
  options.focus = get("tl.focus") ?? "";
  options.focusBy = oneOf(get("tl.focusby"), ["name", "collective"] as const, options.focusBy);
}

/** The state a URL's keys describe; unknown or malformed values fall back to the defaults. */
function fromParams(params: Map<string, string>): AppState {
  const state = defaultState();
  const get = (key: string) => params.get(key);
  state.run = get("run") ?? "";
  state.worker = get("worker") ?? "";
  state.window = get("window") ?? "";
  state.view = oneOf(get("view"), VIEW_IDS, DEFAULT_VIEW);
  const ops = state.operators;
  ops.group = oneOf(get("op.group"), ["name", "shape", "stack"] as const, ops.group);
  ops.search = get("op.search") ?? "";
  const top = Math.round(Number(get("op.top") ?? ops.top));
  ops.top = Number.isFinite(top) && top >= 1 ? Math.min(50, top) : ops.top;
  ops.chart = oneOf(get("op.chart"), ["bar", "pie"] as const, ops.chart);
  ops.sort = get("op.sort") ?? "";
  ops.desc = get("op.desc") !== "false";
  state.kernels.group = oneOf(get("k.group"), ["name", "op"] as const, state.kernels.group);
  state.kernels.search = get("k.search") ?? "";
  state.memory.device = get("mem.device") ?? "";
  state.memory.range = parseRange(get("mem.range"));
  timelineFromParams(state.timeline, get);
  const cmp = state.compare;
  [cmp.run, cmp.worker, cmp.window] = [get("cmp.run") ?? "", get("cmp.worker") ?? "", get("cmp.window") ?? ""];
  cmp.group = oneOf(get("cmp.group"), ["name", "shape", "stack"] as const, cmp.group);
  cmp.table = oneOf(get("cmp.table"), ["operators", "kernels", "families"] as const, cmp.table);
  cmp.search = get("cmp.search") ?? "";
  return state;
}

/** The window whose location holds the state: TensorBoard's top page when we are in its iframe. */
function hostWindow(): Window {
  try {
    if (window.parent !== window && window.parent.location.hash !== undefined) return window.parent;
  } catch {
    // a cross-origin parent: keep the state in our own URL
  }
  return window;
}

/** The hash split into TensorBoard's parts: "canning", "p.canning.run=x", "other=y". */
function hashParts(win: Window): string[] {
  return win.location.hash.replace(/^#/, "").split("&").filter((part) => part !== "");
}

export function readURL(): AppState {
  const params = new Map<string, string>();
  for (const part of hashParts(hostWindow())) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const key = decodeURIComponent(part.slice(0, eq));
    if (key.startsWith(PREFIX)) params.set(key.slice(PREFIX.length), decodeURIComponent(part.slice(eq + 1)));
  }
  return fromParams(params);
}

/** Writes the state into the hash, keeping TensorBoard's own parts (the tab name first). */
function writeURL(state: AppState): void {
  const win = hostWindow();
  const others = hashParts(win).filter((part) => !decodeURIComponent(part).startsWith(PREFIX));
  const ours = toParams(state).map(([key, value]) => `${encodeURIComponent(PREFIX + key)}=${encodeURIComponent(value)}`);
  const hash = `#${[...others, ...ours].join("&")}`;
  if (hash === win.location.hash || (hash === "#" && !win.location.hash)) return;
  // replaceState: no hashchange event (TensorBoard would re-route) and no history entry per keystroke
  win.history.replaceState(win.history.state, "", hash);
}

// -- the store ----------------------------------------------------------------------------------------

type Listener = (state: AppState, previous: AppState) => void;

/** Holds the state; update() replaces it, writes the URL and tells the listeners. */
export class AppStore {
  private current: AppState;
  private listeners: Listener[] = [];

  constructor(initial: AppState) {
    this.current = initial;
  }

  get state(): AppState {
    return this.current;
  }

  subscribe(listener: Listener): void {
    this.listeners.push(listener);
  }

  update(patch: Partial<AppState>): void {
    const previous = this.current;
    this.current = { ...previous, ...patch };
    writeURL(this.current);
    for (const listener of this.listeners) listener(this.current, previous);
  }

  operators(patch: Partial<OperatorsOptions>): void {
    this.update({ operators: { ...this.current.operators, ...patch } });
  }

  kernels(patch: Partial<KernelsOptions>): void {
    this.update({ kernels: { ...this.current.kernels, ...patch } });
  }

  memory(patch: Partial<MemoryOptions>): void {
    this.update({ memory: { ...this.current.memory, ...patch } });
  }

  timeline(patch: Partial<TimelineOptions>): void {
    this.update({ timeline: { ...this.current.timeline, ...patch } });
  }

  compare(patch: Partial<CompareOptions>): void {
    this.update({ compare: { ...this.current.compare, ...patch } });
  }
}
