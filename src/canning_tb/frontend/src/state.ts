// The one app state: what is selected (run, worker, window, view) and each view's options. The
// shell and the views render from it and change it only through AppStore.update; the URL holds it,
// so a reload (or a shared link) opens the same view on the same selection.
//
// Where it is kept in the URL: the plugin runs in TensorBoard's iframe, whose own URL is lost on a
// reload, so the state goes into the top page's hash with TensorBoard's convention for plugin data,
// `#canning&p.canning.<key>=<value>` (what TensorBoard's experimental.GetURLPluginData reads). The
// iframe is same-origin; outside an iframe (tests, a bare page) its own hash is used.
import type { GroupBy } from "./api";

export type ViewId = "overview" | "operators" | "kernels" | "roofline" | "modules" | "memory" | "communication" | "timeline" | "compare" | "suggestions";
export const VIEW_IDS: ViewId[] = ["overview", "operators", "kernels", "roofline", "modules", "memory", "communication", "timeline", "compare", "suggestions"];
export const DEFAULT_VIEW: ViewId = "overview";

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
  /** the ranks side by side: by their clocks as recorded, their first steps, or the clocks aligned through the
   * collectives (the cross-rank path's offsets, /critical_path_ranks) */
  align: "clock" | "step" | "collectives";
  /** a name to open at its longest call (set by links from the other views, then resolved) */
  focus: string;
  /** what `focus` is: an event name, or a collective kind of the Communication view */
  focusBy: "name" | "collective";
  /** an instant marked on the axis (ns relative to the window start; a link's "here"); -1 = none */
  mark: number;
  /** the counter lanes to bring into sight with the mark ("memory:<device>"); "" = none */
  lane: string;
  /** the step whose critical path is highlighted (timeline_path.ts); -1 = off */
  path: number;
  /** with All ranks: the step's critical path across the ranks (timeline_xpath.ts), not the selected rank's own */
  pathRanks: boolean;
  /** the measured (selected) range on the axis, ns relative to the selected window's start; its
   * summary opens with it; null = none */
  measure: [number, number] | null;
  /** the user's markers on the axis (ns relative to the selected window's start), in order */
  marks: number[];
  /** tracks hidden and tracks pinned to the top of their rank, as "<rank>.<track id>" */
  hidden: string[];
  pinned: string[];
  /** only the tracks whose name (or "rank N") holds this text; "" = all */
  filter: string;
  /** only the tracks that hold a match of the search */
  onlyHits: boolean;
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
  /** each table's sort ("key" or "-key" for descending), by the table's element id: every SortTable
   * keeps its sort here by itself (views/common.ts), so tables added later get it too */
  sorts: Record<string, string>;
  /** free options of views that keep their own ("module.depth" -> "3"): URL keys `o.<name>`, so a
   * view added later keeps its options in the URL without a change here */
  options: Record<string, string>;
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
    timeline: { range: null, event: -1, search: "", ranks: false, align: "clock", focus: "", focusBy: "name", mark: -1, lane: "", path: -1, pathRanks: false, measure: null, marks: [], hidden: [], pinned: [], filter: "", onlyHits: false },
    compare: { run: "", worker: "", window: "", group: "name", table: "operators", search: "" },
    sorts: {},
    options: {},
  };
}

/** Options that belong to the run they were chosen in: a Compare baseline, the sorts and searches, the
 * memory device. Another run starts from the defaults, as a fresh link does: a sort or a device that
 * suits one run hides what matters in another (a CPU run's host-time sort on a GPU run). The
 * baseline is kept when it was chosen together with the new run (Compare's Swap). Preferences of
 * the views (grouping, top N, chart type, ranks side by side) stay. */
export function withRunDefaults(state: AppState, keepBaseline: boolean): AppState {
  const base = defaultState();
  const { [CHIP_OPTION]: _chip, ...options } = state.options; // a chip is one run's hardware
  const compare = keepBaseline ? state.compare : { ...state.compare, run: "", worker: "", window: "", search: "" };
  return {
    ...state,
    operators: { ...state.operators, search: "", sort: base.operators.sort, desc: base.operators.desc },
    kernels: { ...state.kernels, search: "" },
    memory: { ...state.memory, device: base.memory.device },
    timeline: { ...state.timeline, search: "", measure: null, marks: [], hidden: [], pinned: [], filter: "" },
    compare,
    sorts: {},
    options,
  };
}

/** The option (URL key `o.chip`) of the chip chosen in the UI (views/chip_select.ts); absent = the files'. */
export const CHIP_OPTION = "chip";

/** Whether `to` holds another Compare baseline than `from`. */
export function baselineMoved(from: AppState, to: AppState): boolean {
  return (["run", "worker", "window"] as const).some((key) => from.compare[key] !== to.compare[key]);
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
    ["tl.mark", String(state.timeline.mark), String(base.timeline.mark)],
    ["tl.lane", state.timeline.lane, base.timeline.lane],
    ["tl.path", String(state.timeline.path), String(base.timeline.path)],
    ["tl.pathranks", String(state.timeline.pathRanks), String(base.timeline.pathRanks)],
    ["tl.sel", state.timeline.measure ? state.timeline.measure.join("~") : "", ""],
    ["tl.marks", state.timeline.marks.join(","), ""],
    ["tl.hide", state.timeline.hidden.join(","), ""],
    ["tl.pin", state.timeline.pinned.join(","), ""],
    ["tl.filter", state.timeline.filter, ""],
    ["tl.onlyhits", String(state.timeline.onlyHits), "false"],
    ["cmp.run", state.compare.run, ""],
    ["cmp.worker", state.compare.worker, ""],
    ["cmp.window", state.compare.window, ""],
    ["cmp.group", state.compare.group, base.compare.group],
    ["cmp.table", state.compare.table, base.compare.table],
    ["cmp.search", state.compare.search, ""],
    ...Object.entries(state.sorts).map(([table, sort]): [string, string, string] => [`sort.${table}`, sort, ""]),
    ...Object.entries(state.options).map(([name, value]): [string, string, string] => [`o.${name}`, value, ""]),
  ];
  return flat.filter(([, value, dflt]) => value !== dflt).map(([key, value]) => [key, value]);
}

/** Reads a URL's keys; a value it cannot use falls back to the default and leaves a note. */
class ParamReader {
  readonly notes: string[] = [];
  constructor(private params: Map<string, string>) {}

  text(key: string): string {
    return this.params.get(key) ?? "";
  }

  /** the value when `parse` accepts it; absent or rejected: `dflt` (rejected: with a note) */
  parsed<T>(key: string, parse: (text: string) => T | null, dflt: T): T {
    const text = this.params.get(key);
    if (text === undefined || text === "") return dflt;
    const value = parse(text);
    if (value !== null) return value;
    this.notes.push(`the link's ${key}=“${text}” is not valid here`);
    return dflt;
  }

  oneOf<T extends string>(key: string, allowed: readonly T[], dflt: T): T {
    return this.parsed(key, (text) => (allowed.includes(text as T) ? (text as T) : null), dflt);
  }

  bool(key: string, dflt: boolean): boolean {
    return this.parsed(key, (text) => (text === "true" ? true : text === "false" ? false : null), dflt);
  }

  /** the keys under a prefix ("sort." -> {"op-table": "-calls"}) */
  under(prefix: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [key, value] of this.params) if (key.startsWith(prefix) && key.length > prefix.length && value !== "") out[key.slice(prefix.length)] = value;
    return out;
  }
}

function parseRange(text: string): [number, number] | null {
  const match = /^(\d+)-(\d+)$/.exec(text);
  if (!match) return null;
  const [lo, hi] = [Number(match[1]), Number(match[2])];
  return lo <= hi ? [lo, hi] : null;
}

/** A timeline range "lo~hi" (ns, may be negative: other ranks can start before the selected one). */
function parseSpan(text: string): [number, number] | null {
  const match = /^(-?\d+)~(-?\d+)$/.exec(text);
  if (!match) return null;
  const [lo, hi] = [Number(match[1]), Number(match[2])];
  return lo < hi ? [lo, hi] : null;
}

function parseTop(text: string): number | null {
  const top = Number(text);
  return Number.isInteger(top) && top >= 1 && top <= 50 ? top : null;
}

function parseEvent(text: string): number | null {
  const event = Number(text);
  return Number.isInteger(event) && event >= -1 ? event : null;
}

const GROUPS = ["name", "shape", "stack"] as const;

function timelineFromParams(options: TimelineOptions, read: ParamReader): void {
  options.range = read.parsed("tl.range", parseSpan, null);
  options.event = read.parsed("tl.event", parseEvent, -1);
  options.search = read.text("tl.search");
  options.ranks = read.bool("tl.ranks", false);
  options.align = read.oneOf("tl.align", ["clock", "step", "collectives"] as const, options.align);
  options.focus = read.text("tl.focus");
  options.focusBy = read.oneOf("tl.focusby", ["name", "collective"] as const, options.focusBy);
  options.mark = read.parsed("tl.mark", parseEvent, -1);
  options.lane = read.text("tl.lane");
  options.path = read.parsed("tl.path", parseEvent, -1);
  options.pathRanks = read.bool("tl.pathranks", false);
  options.measure = read.parsed("tl.sel", parseSpan, null);
  options.marks = read.parsed("tl.marks", parseMarks, []);
  options.hidden = read.parsed("tl.hide", parseTrackKeys, []);
  options.pinned = read.parsed("tl.pin", parseTrackKeys, []);
  options.filter = read.text("tl.filter");
  options.onlyHits = read.bool("tl.onlyhits", false);
}

/** Markers "a,b,c": integers (ns, may be negative), at most 50. */
function parseMarks(text: string): number[] | null {
  const parts = text.split(",");
  if (parts.length > 50 || !parts.every((part) => /^-?\d+$/.test(part))) return null;
  return parts.map(Number).sort((a, b) => a - b);
}

/** Track keys "<rank>.<track>,...". */
function parseTrackKeys(text: string): string[] | null {
  const parts = text.split(",");
  return parts.length <= 2000 && parts.every((part) => /^-?\d+\.\d+$/.test(part)) ? parts : null;
}

function operatorsFromParams(ops: OperatorsOptions, read: ParamReader): void {
  ops.group = read.oneOf("op.group", GROUPS, ops.group);
  ops.search = read.text("op.search");
  ops.top = read.parsed("op.top", parseTop, ops.top);
  ops.chart = read.oneOf("op.chart", ["bar", "pie"] as const, ops.chart);
  ops.sort = read.text("op.sort");
  ops.desc = read.bool("op.desc", true);
}

/** The state a URL's keys describe, and a note for each value that fell back to its default. */
function fromParams(params: Map<string, string>): { state: AppState; notes: string[] } {
  const state = defaultState();
  const read = new ParamReader(params);
  [state.run, state.worker, state.window] = [read.text("run"), read.text("worker"), read.text("window")];
  state.view = read.oneOf("view", VIEW_IDS, DEFAULT_VIEW);
  operatorsFromParams(state.operators, read);
  state.kernels.group = read.oneOf("k.group", ["name", "op"] as const, state.kernels.group);
  state.kernels.search = read.text("k.search");
  state.memory.device = read.text("mem.device");
  state.memory.range = read.parsed("mem.range", parseRange, null);
  timelineFromParams(state.timeline, read);
  const cmp = state.compare;
  [cmp.run, cmp.worker, cmp.window] = [read.text("cmp.run"), read.text("cmp.worker"), read.text("cmp.window")];
  cmp.group = read.oneOf("cmp.group", GROUPS, cmp.group);
  cmp.table = read.oneOf("cmp.table", ["operators", "kernels", "families"] as const, cmp.table);
  cmp.search = read.text("cmp.search");
  state.sorts = read.under("sort.");
  state.options = read.under("o.");
  return { state, notes: read.notes };
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

/** %-decoding that gives null for a malformed escape (a hand-edited or cut link) instead of throwing. */
function decode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch (err) {
    if (err instanceof URIError) return null;
    throw err;
  }
}

/** The state in the URL, and a note for each of its values that could not be used. */
export function readURL(): { state: AppState; notes: string[] } {
  const params = new Map<string, string>();
  const bad: string[] = [];
  for (const part of hashParts(hostWindow())) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const [key, value] = [decode(part.slice(0, eq)), decode(part.slice(eq + 1))];
    if (key === null || value === null) bad.push(`the link's “${part}” is not well-formed`);
    else if (key.startsWith(PREFIX)) params.set(key.slice(PREFIX.length), value);
  }
  const read = fromParams(params);
  return { state: read.state, notes: [...bad, ...read.notes] };
}

/** Writes the state into the hash, keeping TensorBoard's own parts (the tab name first). */
function writeURL(state: AppState): void {
  const win = hostWindow();
  const others = hashParts(win).filter((part) => !(decode(part) ?? part).startsWith(PREFIX));
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

  /** A table's sort ("key" / "-key" descending); "" forgets it. */
  sort(table: string, sort: string): void {
    const sorts = { ...this.current.sorts };
    if (sort) sorts[table] = sort;
    else delete sorts[table];
    this.update({ sorts });
  }

  /** A view's own option ("module.depth"); "" forgets it. */
  option(name: string, value: string): void {
    const options = { ...this.current.options };
    if (value) options[name] = value;
    else delete options[name];
    this.update({ options });
  }
}
