// Timeline: the window's tracks (host threads, device streams, NPU planes) with nested slices on a
// <canvas>, drawn from /timeline_tile answers at the canvas' pixel width; every rank's window side by
// side on one axis (by clock or by first step); details, search, range summaries and collective peers
// from their routes. The visible range, the selected slice and the options live in the app state.
import { getJSON, type Selection, type TimelineBrief, type TimelineTracksLoading, type TimelineTracksResponse, type TimelinePeersResponse, type TimelineRank, type TimelineSearchResponse, type TimelineSliceResponse, type TimelineSummaryResponse } from "../api";
import { h, option } from "../dom";
import { errorText } from "./common";
import { GUTTER, RULER, drawLanes, noMarks, toNs, toX, type Boxes, type Marks, type SearchHit, type Viewport } from "./timeline_draw";
import { drawGrid, drawRuler } from "./timeline_ruler";
import { attachInput, type TimelineActions } from "./timeline_input";
import { laneSeries, counterText, valueAt } from "./timeline_counters";
import { helpPanel } from "./timeline_help";
import { drawMarks, drawUserMarks } from "./timeline_marks";
import { PathOverlay } from "./timeline_path";
import { pathClocks } from "./timeline_xpath";
import { foldedAtFirst, layout, loadRanks, loadTracks, openAtFirst, progressText, refreshRank, shifts, type Lane, type RankView, type TrackChoice } from "./timeline_model";
import { MIN_SPAN, nearLinks, revealRange, revealScroll, unfold, type Target } from "./timeline_reveal";
import { detailsPanel, hitsPanel, summaryPanel, type SideActions } from "./timeline_side";
import { tracksPanel } from "./timeline_tracks";
import { showError, showLoading, type ViewDef, type ViewHost } from "./view";

const ARGS_POLL_MS = 1500;
const SEARCH_MS = 250; // typing pauses this long before the search asks the server

class TimelinePanel implements TimelineActions, SideActions {
  private canvas = h("canvas", { id: "timeline-canvas", tabindex: "0" });
  /** gives the scroll area the height of every lane; the canvas only draws what is in sight */
  private spacer = h("div", { class: "timeline-spacer" });
  private wrap = h("div", { class: "timeline-canvas-wrap" }, this.canvas, this.spacer);
  private side = h("div", { id: "timeline-side", class: "timeline-sidebar" });
  private count = h("span", { id: "timeline-search-count", class: "muted" });
  private status = h("span", { id: "timeline-status", class: "muted" });
  /** what the server is still reading or indexing (ranks drawn with their ruler and steps only) */
  private progress = h("span", { id: "timeline-progress", class: "muted" });
  private view: Viewport = { lo: 0, hi: 1, width: 1, top: RULER, height: RULER };
  private lanes: Lane[] = [];
  private boxes: Boxes = new Map();
  private marks: Marks = noMarks();
  /** the tracks panel (hide, pin), shown by its button */
  private trackList = h("section", { id: "timeline-tracks", class: "card timeline-help", hidden: true });
  /** the search's matches in sight, listed under the toolbar (the side panel keeps its width) */
  private hitsBox = h("div", { id: "timeline-hits-box" });
  private searchTimer = 0;
  /** the tracks holding a match of the search, per rank index (the "only tracks with matches" filter) */
  private matchTracks: Map<number, Set<number>> | null = null;
  private searching: AbortController | null = null;
  private help = helpPanel();
  /** the counter lanes a link asked to show ("memory:<device>"), brought into sight once they are laid out */
  private pendingLane = "";
  private slice: TimelineSliceResponse | null = null;
  private fetching: AbortController | null = null;
  private timer = 0;
  private path!: PathOverlay;

  constructor(private host: ViewHost, private ranks: RankView[], private rankList: TimelineRank[], private selected: number,
    private errors: string[]) {}

  private get options() {
    return this.host.store.state.timeline;
  }

  show(): void {
    this.path = new PathOverlay(this.host.store, this.ranks[this.selected]?.sel ?? this.host.sel, this.host.signal, () => this.draw(),
      this.ranks, (lo, hi) => this.zoomTo(lo, hi));
    this.host.el.replaceChildren(this.toolbar(), this.help, this.trackList, this.hitsBox, this.path.ranksPath.panel, h("div", { class: "timeline-body" }, this.wrap, this.side));
    attachInput(this.host.el, this.canvas, this, this.host.signal);
    this.canvas.addEventListener("mousemove", (event) => this.hover(event));
    this.wrap.addEventListener("scroll", () => this.draw());
    const observer = new ResizeObserver(() => this.resize());
    observer.observe(this.wrap);
    this.host.signal.addEventListener("abort", () => observer.disconnect());
    const full = this.fullRange();
    const [lo, hi] = this.options.range ?? full;
    this.view = { lo, hi, width: Math.max(1, this.wrap.clientWidth - GUTTER), top: RULER, height: RULER };
    this.lanes = this.layout();
    if (this.options.mark >= 0) this.marks.instant = this.options.mark;
    this.marks.user = [...this.options.marks];
    if (this.options.measure) {
      this.marks.range = this.options.measure;
      void this.summarize(...this.options.measure);
    }
    this.pendingLane = this.options.lane;
    // the first tiles at once (no debounce); the critical path's steps (a toolbar list) once they are
    // in: the server answers the first paint's requests alone
    void this.fetchTiles().finally(() => this.path.start());
    if (this.ranks.some((rank) => rank.pending)) void this.poll();
    if (this.options.focus) void this.focus(this.options.focus);
    else if (this.options.event >= 0) void this.select(this.selected, this.options.event, false);
  }

  private fullRange(): [number, number] {
    const ends = this.ranks.map((rank) => [rank.shift, rank.shift + rank.tracks.duration_ns]);
    return [Math.min(...ends.map((e) => e[0])), Math.max(...ends.map((e) => e[1]), MIN_SPAN)];
  }

  private toolbar(): HTMLElement {
    const search = h("input", { id: "timeline-search", type: "search", placeholder: "Search slices by name", "aria-label": "Search slices by name" });
    search.value = this.options.search;
    const prev = h("button", { type: "button", class: "button", id: "timeline-prev", title: "Previous match (Shift + Enter)" }, "◀");
    const next = h("button", { type: "button", class: "button", id: "timeline-next", title: "Next match (Enter)" }, "▶");
    const step = (direction: 1 | -1) => {
      const changed = search.value !== this.options.search;
      this.host.store.timeline({ search: search.value });
      void this.search(direction);
      if (changed) void this.findHits();
    };
    search.onchange = () => this.host.store.timeline({ search: search.value });
    search.oninput = () => {
      window.clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => {
        this.host.store.timeline({ search: search.value });
        void this.findHits();
      }, SEARCH_MS);
    };
    search.onkeydown = (event) => {
      if (event.key === "Enter") {
        window.clearTimeout(this.searchTimer);
        step(event.shiftKey ? -1 : 1);
      }
    };
    prev.onclick = () => step(-1);
    next.onclick = () => step(1);
    const fit = h("button", { type: "button", class: "button", id: "timeline-fit", title: "Fit the selected slice, else the selected range, else the whole window (F)" }, "Fit");
    fit.onclick = () => this.fit();
    const ranks = h("input", { type: "checkbox", id: "timeline-ranks" });
    ranks.checked = this.options.ranks;
    ranks.onchange = () => {
      this.host.store.timeline({ ranks: ranks.checked, range: null });
      void load(this.host);
    };
    const align = h("select", { id: "timeline-align", "aria-label": "Align ranks" }, option("clock", "on the clock", this.options.align === "clock"), option("step", "on the first step", this.options.align === "step"),
      option("collectives", "on the collectives", this.options.align === "collectives"));
    align.title = "on the clock: as recorded; on the collectives: each clock less its offset through the collectives (the critical path's)";
    align.disabled = !this.options.ranks;
    align.onchange = () => void this.align(align.value as "clock" | "step" | "collectives");
    const params = new URLSearchParams({ ...this.host.sel }).toString();
    const download = h("a", { id: "timeline-download", class: "button", href: `./timeline_download?${params}`, download: "" }, "Download trace");
    const filter = h("input", { id: "timeline-track-filter", type: "search", placeholder: "Tracks: rank, thread, stream…", "aria-label": "Show only the tracks whose name holds (several: separate by commas)", title: "Show only the tracks whose name holds this (rank 1, thread, stream 7, HCCL…; several: separate by commas)" });
    filter.value = this.options.filter;
    filter.oninput = () => {
      this.host.store.timeline({ filter: filter.value });
      this.relayout();
    };
    const onlyHits = h("input", { type: "checkbox", id: "timeline-only-hits" });
    onlyHits.checked = this.options.onlyHits;
    onlyHits.onchange = () => {
      this.host.store.timeline({ onlyHits: onlyHits.checked });
      this.relayout();
    };
    const tracks = h("button", { type: "button", class: "button", id: "timeline-tracks-button", "aria-expanded": "false", title: "Hide, show and pin tracks" }, "Tracks");
    tracks.onclick = () => this.toggleTracks(tracks);
    return h("div", { class: "toolbar" }, h("label", { class: "grow" }, search), prev, next, this.count, fit,
      h("label", {}, ranks, "All ranks"), h("label", {}, "Align ", align), filter,
      h("label", { title: "Only the tracks that hold a match of the search" }, onlyHits, "Matching tracks"), tracks, this.path.control(), download, this.helpButton(), this.progress, this.status);
  }

  private helpButton(): HTMLButtonElement {
    const button = h("button", { type: "button", class: "button", id: "timeline-help-button", "aria-expanded": "false", title: "Mouse and keys (?)" }, "Keys ?");
    button.onclick = () => this.toggleHelp();
    return button;
  }

  private layout(): Lane[] {
    return layout(this.ranks, this.choice());
  }

  private choice(): TrackChoice {
    const matches = this.options.onlyHits && this.options.search.trim() ? this.matchTracks : null;
    return { hidden: this.options.hidden, pinned: this.options.pinned, filter: this.options.filter, matches: matches ?? null };
  }

  /** Lanes again after a change of the tracks shown (the tiles hold every track: no fetch). */
  private relayout(): void {
    this.lanes = this.layout();
    this.draw();
    if (!this.trackList.hidden) this.fillTracks();
  }

  private toggleTracks(button: HTMLElement): void {
    this.trackList.hidden = !this.trackList.hidden;
    button.setAttribute("aria-expanded", String(!this.trackList.hidden));
    if (!this.trackList.hidden) this.fillTracks();
  }

  private fillTracks(): void {
    this.trackList.replaceChildren(...tracksPanel(this.ranks, this.choice(), (patch) => {
      this.host.store.timeline(patch);
      const filter = this.host.el.querySelector<HTMLInputElement>("#timeline-track-filter");
      if (filter && patch.filter !== undefined) filter.value = patch.filter;
      this.relayout();
    }));
  }

  mark(x: number, clear: boolean): void {
    const marks = clear ? [] : [...this.options.marks, Math.round(toNs(this.view, Math.max(GUTTER, x)))].sort((a, b) => a - b).slice(-50);
    this.marks.user = marks;
    this.host.store.timeline({ marks });
    this.draw();
  }

  toggleHelp(): void {
    this.help.hidden = !this.help.hidden;
    this.host.el.querySelector("#timeline-help-button")?.setAttribute("aria-expanded", String(!this.help.hidden));
  }

  focusSearch(): void {
    this.host.el.querySelector<HTMLInputElement>("#timeline-search")?.focus();
  }

  /** Ask again for the tracks of ranks the server is still reading or indexing; draw each as it comes. */
  private async poll(): Promise<void> {
    while (!this.host.signal.aborted) {
      const pending = this.ranks.filter((rank) => rank.pending);
      if (!pending.length) break;
      const texts: string[] = [];
      for (const rank of pending) {
        try {
          const answer = await getJSON<TimelineTracksResponse | TimelineTracksLoading>("timeline_tracks", { ...rank.sel }, this.host.signal);
          if ("loading" in answer) texts.push(`${rank.label}: ${progressText(answer)}`);
          else Object.assign(rank, { tracks: answer, pending: false, openGroups: openAtFirst(answer), folded: foldedAtFirst(answer) });
        } catch (err) {
          if ((err as Error).name === "AbortError") return;
          rank.pending = false;
          this.status.textContent = `${rank.label}: ${errorText(err)}`;
        }
      }
      this.progress.textContent = texts.join("; ");
      this.progress.dataset.pending = String(texts.length);
      if (texts.length < pending.length) {
        this.lanes = this.layout();
        this.draw();
        this.refetch();
      }
    }
    this.progress.textContent = "";
    this.progress.dataset.pending = "0";
  }

  // -- drawing ------------------------------------------------------------------------------------

  /** The observer also calls this once as it starts, with the width show() used: no second fetch then. */
  private resize(): void {
    const width = Math.max(1, this.wrap.clientWidth - GUTTER);
    const changed = width !== this.view.width;
    this.view.width = width;
    this.draw();
    if (changed) this.refetch();
  }

  private draw(): void {
    const ratio = window.devicePixelRatio || 1;
    const total = RULER + this.lanes.reduce((sum, lane) => sum + lane.height, 0) + 4;
    const height = Math.max(RULER, Math.min(total, Math.floor(window.innerHeight * 0.75)));
    this.spacer.style.height = `${total - height}px`;
    this.view.top = RULER - this.wrap.scrollTop;
    this.view.height = height;
    const width = GUTTER + this.view.width;
    if (this.canvas.width !== Math.round(width * ratio) || this.canvas.height !== Math.round(height * ratio)) {
      this.canvas.width = Math.round(width * ratio);
      this.canvas.height = Math.round(height * ratio);
      this.canvas.style.width = `${width}px`;
      this.canvas.style.height = `${height}px`;
    }
    const ctx = this.canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    drawGrid(ctx, this.view, height);
    this.boxes = drawLanes(ctx, this.view, this.ranks, this.lanes);
    this.canvas.dataset.hits = String(drawMarks(ctx, this.view, this.ranks, this.lanes, this.marks, this.slice, height));
    this.path.draw(ctx, this.view, this.ranks, this.lanes, this.selected);
    this.canvas.dataset.ticks = drawRuler(ctx, this.view).join("|");
    drawUserMarks(ctx, this.view, this.marks, height);
    this.describe();
  }

  /** What is drawn, on the canvas' data attributes (tests and curious users read them). */
  private describe(): void {
    const data = this.canvas.dataset;
    data.lo = String(Math.round(this.view.lo));
    data.hi = String(Math.round(this.view.hi));
    data.items = String(this.ranks.reduce((sum, rank) => sum + (rank.tile?.header.count ?? 0), 0));
    // when the first items were drawn (the page's clock): the benchmark's first paint
    if (!data.paintedAt && data.items !== "0") data.paintedAt = String(Math.round(performance.now()));
    data.bytes = String(this.ranks.reduce((sum, rank) => sum + (rank.tile?.bytes ?? 0), 0));
    data.ranks = String(this.ranks.length);
    data.path = String(this.path.drawn);
    data.xpath = JSON.stringify(this.path.ranksPath.drawn);
    data.lanes = String(this.lanes.length);
    data.tracks = this.lanes.filter((lane) => lane.kind === "row" && lane.depth === 0).map((lane) => `${this.ranks[lane.rank].tracks.rank}.${lane.track}`).join(",");
    data.marks = this.marks.user.map((at) => String(Math.round(toX(this.view, at)))).join(",");
    data.measure = this.marks.range ? this.marks.range.map((v) => String(Math.round(v))).join("~") : "";
    data.shifts = this.ranks.map((rank) => `${rank.tracks.rank}:${Math.round(rank.shift)}`).join(",");
    data.npuLanes = String(this.lanes.filter((lane) => lane.kind === "npu").length);
    // canvas y of the first NPU counter group's label (-1 when none is in sight)
    const group = this.lanes.find((lane) => lane.kind === "group" && this.view.top + lane.y >= RULER && this.view.top + lane.y + lane.height <= this.view.height);
    data.groupY = String(group ? Math.round(this.view.top + group.y + group.height / 2) : -1);
    // the labelled lanes wholly in sight, as "label@y" (y: the canvas y of the lane's middle)
    const inSight = (lane: Lane) => this.view.top + lane.y >= RULER && this.view.top + lane.y + lane.height <= this.view.height;
    data.shown = this.lanes.filter((lane) => lane.label && inSight(lane)).map((lane) => `${lane.label}@${Math.round(this.view.top + lane.y + lane.height / 2)}`).join("|");
    const box = this.selectedBox();
    data.selectedBox = box ? [box.x, box.y, box.w, box.h].map((v) => Math.round(v)).join(",") : "";
  }

  private selectedBox() {
    const sel = this.marks.selected;
    if (!sel) return null;
    const rank = this.ranks[sel.rank];
    for (const box of this.boxes.get(sel.rank) ?? []) if (rank.tile?.event[box.item] === sel.event) return box;
    return null;
  }

  private refetch(): void {
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => void this.fetchTiles(), 30);
  }

  private async fetchTiles(): Promise<void> {
    this.fetching?.abort();
    const controller = new AbortController();
    this.fetching = controller;
    this.host.signal.addEventListener("abort", () => controller.abort());
    const { lo, hi, width } = this.view;
    const results = await Promise.allSettled(this.ranks.map((rank) => refreshRank(rank, lo, hi, width, controller.signal)));
    if (controller.signal.aborted) return;
    const failed = results.flatMap((result, i) => (result.status === "rejected" ? [`${this.ranks[i].label}: ${errorText(result.reason)}`] : []));
    this.lanes = this.layout();
    this.status.textContent = [...this.errors, ...failed].join("; ");
    this.draw();
    this.showPendingLane();
    if (this.options.search.trim()) await this.findHits();
    this.host.setState("loaded");
  }

  /** Scrolls to the counter lanes a link asked for, once the counters are laid out (they come with
   * the first tiles). */
  private showPendingLane(): void {
    if (!this.pendingLane.startsWith("memory:")) return;
    const device = this.pendingLane.slice("memory:".length);
    const lane = this.lanes.find((l) => l.kind === "counter" && l.rank === this.selected && l.label.startsWith(`${device} `));
    this.pendingLane = "";
    if (!lane) return;
    this.wrap.scrollTop = Math.max(0, lane.y - (this.view.height - RULER) / 2);
    this.draw();
  }

  // -- navigation ---------------------------------------------------------------------------------

  private setRange(lo: number, hi: number, write: boolean): void {
    if (hi - lo < MIN_SPAN) [lo, hi] = [(lo + hi) / 2 - MIN_SPAN / 2, (lo + hi) / 2 + MIN_SPAN / 2];
    this.view.lo = lo;
    this.view.hi = hi;
    this.draw();
    this.refetch();
    if (write) this.settle();
  }

  settle(): void {
    this.host.store.timeline({ range: [Math.floor(this.view.lo), Math.ceil(this.view.hi)] });
  }

  zoom(factor: number, x: number): void {
    const at = toNs(this.view, x);
    this.setRange(at - (at - this.view.lo) * factor, at + (this.view.hi - at) * factor, false);
  }

  pan(dx: number): void {
    const shift = (dx / this.view.width) * (this.view.hi - this.view.lo);
    this.setRange(this.view.lo + shift, this.view.hi + shift, false);
  }

  /** The selected slice with its near linked events, else the selected range, else the window. */
  fit(): void {
    const sel = this.marks.selected;
    if (sel && this.slice) {
      const target = this.target(sel.rank, this.slice);
      const items = [target, ...nearLinks(target, this.linked(sel.rank))];
      const shift = this.ranks[sel.rank].shift;
      const lo = Math.min(...items.map((i) => i.start_ns)) + shift;
      const hi = Math.max(...items.map((i) => i.start_ns + i.dur_ns)) + shift;
      const pad = Math.max((hi - lo) * 0.1, MIN_SPAN / 2);
      this.setRange(lo - pad, hi + pad, true);
      return;
    }
    const [lo, hi] = this.marks.range ?? this.fullRange();
    this.setRange(lo, hi, true);
  }

  reset(): void {
    this.setRange(...this.fullRange(), true);
  }

  /** Selects the selected slice's linked event that starts just before (-1) or after (1) it. */
  follow(direction: 1 | -1): void {
    const sel = this.marks.selected;
    if (!sel || !this.slice) return;
    const start = this.slice.start_ns;
    const links = this.slice.links.filter((l) => (direction > 0 ? l.start_ns >= start : l.start_ns <= start) && l.event !== this.slice?.event);
    links.sort((a, b) => direction * (a.start_ns - b.start_ns));
    if (links.length) void this.select(sel.rank, links[0].event, true);
  }

  zoomTo(lo: number, hi: number): void {
    this.setRange(lo, hi, true);
  }

  private async align(align: "clock" | "step" | "collectives"): Promise<void> {
    this.host.store.timeline({ align });
    const clocks = align === "collectives" ? await pathClocks(this.host.sel, this.host.signal) : undefined;
    if (clocks === null) this.status.textContent = "The clock offsets through the collectives are not known yet (the ranks are being digested): aligned on the clock.";
    const offsets = shifts(this.rankList, this.selected, align, clocks ?? undefined);
    this.ranks.forEach((rank, i) => (rank.shift = offsets[i]));
    this.path.aligned();
    this.setRange(...this.fullRange(), true);
  }

  private target(rank: number, slice: TimelineBrief): Target {
    return { rank, track: slice.track, depth: slice.depth, start_ns: slice.start_ns, dur_ns: slice.dur_ns };
  }

  private linked(rank: number): Target[] {
    return (this.slice?.links ?? []).map((link) => this.target(rank, link));
  }

  /** Bring a selected slice and its linked events into sight: open the folds that hide their rows,
   * zoom when they are out of the range (or the slice too thin to see), scroll to their rows. */
  private reveal(rank: number, slice: TimelineSliceResponse): void {
    const target = this.target(rank, slice);
    const linked = this.linked(rank);
    if (unfold(this.ranks, [target, ...linked])) {
      this.lanes = this.layout();
      this.refetch();
    }
    this.draw(); // the lanes' height, for the scroll below
    this.wrap.scrollTop = revealScroll(this.lanes, this.view.height - RULER, this.wrap.scrollTop, target, nearLinks(target, linked));
    const range = revealRange(this.view, this.ranks[rank].shift, target, linked);
    if (range) this.setRange(...range, true);
    else this.draw();
  }

  // -- selection ----------------------------------------------------------------------------------

  onRuler(y: number): boolean {
    return y < RULER;
  }

  click(x: number, y: number): void {
    if (y < RULER) return;
    const lane = this.lanes.find((l) => y - this.view.top >= l.y && y - this.view.top < l.y + l.height);
    if (!lane) return;
    if (lane.kind === "row" && lane.foldable && x < GUTTER) {
      const folded = this.ranks[lane.rank].folded;
      if (!folded.delete(lane.track)) folded.add(lane.track);
      this.lanes = this.layout();
      this.draw();
      return;
    }
    if (lane.kind === "group" && lane.group) {
      const open = this.ranks[lane.rank].openGroups;
      if (!open.delete(lane.group)) open.add(lane.group);
      this.lanes = this.layout();
      this.draw();
      return;
    }
    if (lane.kind === "rank") {
      this.ranks[lane.rank].collapsed = !this.ranks[lane.rank].collapsed;
      this.lanes = this.layout();
      this.draw();
      this.refetch();
      return;
    }
    const tile = this.ranks[lane.rank].tile;
    const inLane = (this.boxes.get(lane.rank) ?? []).filter((b) => y >= b.y && y <= b.y + b.h);
    // the box under the pointer, else one within a pixel (slices one pixel wide are hard to hit)
    const box = inLane.find((b) => x >= b.x && x <= b.x + b.w) ?? inLane.find((b) => x >= b.x - 1 && x <= b.x + b.w + 1);
    if (box && tile) void this.select(lane.rank, tile.event[box.item], false);
  }

  private hover(event: MouseEvent): void {
    const rect = this.canvas.getBoundingClientRect();
    const [x, y] = [event.clientX - rect.left, event.clientY - rect.top];
    if (this.hoverCounter(x, y)) return;
    for (const [rank, boxes] of this.boxes) {
      const box = boxes.find((b) => y >= b.y && y <= b.y + b.h && x >= b.x && x <= b.x + b.w);
      const tile = this.ranks[rank].tile;
      if (box && tile) {
        const count = tile.count[box.item];
        const name = tile.header.names[tile.name[box.item]];
        this.canvas.title = count > 1 ? `${count} slices, mostly ${name}` : name;
        return;
      }
    }
    this.canvas.title = "";
  }

  /** Over a counter lane: the value at the pointer, drawn beside it and as the canvas' title. */
  private hoverCounter(x: number, y: number): boolean {
    const lane = x >= GUTTER && y >= RULER ? this.lanes.find((l) => y - this.view.top >= l.y && y - this.view.top < l.y + l.height) : undefined;
    const series = lane ? laneSeries(this.ranks[lane.rank], lane) : null;
    if (!lane || !series) {
      if (this.marks.cursor) {
        this.marks.cursor = null;
        this.canvas.dataset.cursor = "";
        this.draw();
      }
      return false;
    }
    const value = valueAt(series.ts, series.values, toNs(this.view, x) - this.ranks[lane.rank].shift);
    const text = value === null ? "no sample yet" : counterText(value, series.unit);
    this.marks.cursor = { x, lane, text };
    this.canvas.title = `${lane.label}: ${text}`;
    this.canvas.dataset.cursor = this.canvas.title;
    this.draw();
    return true;
  }

  async select(rank: number, event: number, reveal: boolean): Promise<void> {
    const sel = this.ranks[rank].sel;
    try {
      const [slice, peers] = await Promise.all([
        getJSON<TimelineSliceResponse>("timeline_slice", { ...sel, event: String(event) }, this.host.signal),
        getJSON<TimelinePeersResponse>("timeline_peers", { ...sel, event: String(event) }, this.host.signal),
      ]);
      this.showSelection(rank, slice, peers, reveal);
    } catch (err) {
      if ((err as Error).name !== "AbortError") this.status.textContent = errorText(err);
    }
  }

  private showSelection(rank: number, slice: TimelineSliceResponse, peers: TimelinePeersResponse, reveal: boolean): void {
    this.slice = slice;
    this.marks.selected = { rank, event: slice.event };
    this.marks.links = slice.links;
    this.marks.peers = new Map();
    for (const peer of peers.peers) {
      const index = this.rankIndex(peer.worker, peer.window);
      if (index >= 0) this.marks.peers.set(index, peer);
    }
    if (rank === this.selected) this.host.store.timeline({ event: slice.event });
    this.side.replaceChildren(detailsPanel(slice, peers, (worker, window) => this.rankIndex(worker, window), this.sideActions(rank)),
      ...Array.from(this.side.querySelectorAll("#timeline-summary")));
    if (reveal) this.reveal(rank, slice);
    else this.draw();
    if (slice.raw_args_state === "pending") window.setTimeout(() => void this.refreshArgs(rank, slice.event), ARGS_POLL_MS);
  }

  /** The selected slice's details again, once the server has read the file's args. */
  private async refreshArgs(rank: number, event: number): Promise<void> {
    const still = () => this.marks.selected?.rank === rank && this.marks.selected.event === event && !this.host.signal.aborted;
    if (!still()) return;
    try {
      const sel = this.ranks[rank].sel;
      const [slice, peers] = await Promise.all([
        getJSON<TimelineSliceResponse>("timeline_slice", { ...sel, event: String(event) }, this.host.signal),
        getJSON<TimelinePeersResponse>("timeline_peers", { ...sel, event: String(event) }, this.host.signal),
      ]);
      if (still()) this.showSelection(rank, slice, peers, false);
    } catch (err) {
      if ((err as Error).name !== "AbortError") this.status.textContent = errorText(err);
    }
  }

  private sideActions(rank: number): SideActions {
    return {
      goTo: (slice) => void this.select(rank, slice.event, true),
      goToPeer: (index, event) => void this.select(index, event, true),
      zoomTo: (lo, hi) => this.zoomTo(lo, hi),
    };
  }

  goTo(slice: TimelineBrief): void {
    void this.select(this.selected, slice.event, true);
  }

  goToPeer(rank: number, event: number): void {
    void this.select(rank, event, true);
  }

  private rankIndex(worker: string, window: string): number {
    return this.ranks.findIndex((rank) => rank.sel.worker === worker && rank.sel.window === window);
  }

  clear(): void {
    this.slice = null;
    this.marks = { ...noMarks(), hits: this.marks.hits, user: this.marks.user };
    if (this.options.mark >= 0) this.host.store.timeline({ mark: -1, lane: "" });
    this.side.replaceChildren();
    this.host.store.timeline({ event: -1, measure: null });
    this.draw();
  }

  // -- search and ranges --------------------------------------------------------------------------

  private async search(direction: 1 | -1): Promise<void> {
    const text = this.options.search.trim();
    if (!text) {
      this.count.textContent = "";
      return;
    }
    const at = this.slice && this.marks.selected?.rank === this.selected ? this.slice.start_ns : Math.floor(this.view.lo - 1);
    try {
      const found = await getJSON<TimelineSearchResponse>("timeline_search", { ...this.host.sel, q: text, at_ns: String(at) }, this.host.signal);
      const target = direction > 0 ? found.next : found.previous;
      const position = found.next_index === null ? found.count : found.next_index;
      this.count.textContent = found.count ? `${direction > 0 ? position + 1 : position} of ${found.count}` : "no match";
      this.count.dataset.count = String(found.count);
      if (target) await this.select(this.selected, target.event, true);
    } catch (err) {
      if ((err as Error).name !== "AbortError") this.count.textContent = errorText(err);
    }
  }

  /** Every match of the search in the visible range of each rank: drawn highlighted, listed beside
   * (the selected rank's), counted in the toolbar. */
  private async findHits(): Promise<void> {
    const text = this.options.search.trim();
    this.searching?.abort();
    const controller = new AbortController();
    this.searching = controller;
    this.host.signal.addEventListener("abort", () => controller.abort());
    if (!text) {
      this.marks.hits = new Map();
      this.matchTracks = null;
      if (this.options.onlyHits) this.lanes = this.layout();
      this.count.textContent = "";
      this.count.dataset.count = "";
      this.hitsBox.replaceChildren();
      this.draw();
      return;
    }
    const { lo, hi } = this.view;
    const asks = this.ranks.map((rank) => {
      if (rank.pending) return Promise.resolve(null);
      const from = Math.floor(lo - rank.shift);
      const to = Math.max(from, Math.ceil(hi - rank.shift));
      return getJSON<TimelineSearchResponse>("timeline_search", { ...rank.sel, q: text, at_ns: String(from), from_ns: String(from), to_ns: String(to) }, controller.signal);
    });
    try {
      const answers = await Promise.all(asks);
      if (controller.signal.aborted) return;
      this.marks.hits = new Map();
      this.matchTracks = new Map();
      answers.forEach((answer, i) => {
        if (!answer) return;
        this.marks.hits.set(i, (answer.hits ?? []).map(([event, track, depth, start_ns, dur_ns]): SearchHit => ({ event, track, depth, start_ns, dur_ns })));
        this.matchTracks?.set(i, new Set(answer.match_tracks));
      });
      if (this.options.onlyHits) this.lanes = this.layout();
      const mine = answers[this.selected];
      if (mine) {
        this.count.textContent = mine.count ? `${mine.count} matches, ${mine.in_range ?? 0} in sight` : "no match";
        this.count.dataset.count = String(mine.count);
        this.count.dataset.inRange = String(mine.in_range ?? 0);
        const panel = hitsPanel(text, mine, this.ranks[this.selected].tracks, (event) => void this.select(this.selected, event, true));
        this.hitsBox.replaceChildren(panel);
      }
      this.draw();
    } catch (err) {
      if ((err as Error).name !== "AbortError") this.count.textContent = errorText(err);
    }
  }

  private async focus(name: string): Promise<void> {
    const by = this.options.focusBy;
    const params = { ...this.host.sel, q: name, ...(by === "collective" ? { collective: "1" } : { exact: "1" }) };
    const found = await getJSON<TimelineSearchResponse>("timeline_search", params, this.host.signal);
    this.host.store.timeline({ focus: "", focusBy: "name", search: by === "collective" ? found.longest?.name ?? "" : name });
    const search = this.host.el.querySelector<HTMLInputElement>("#timeline-search");
    if (search) search.value = this.options.search;
    this.count.textContent = `${found.count} ${by === "collective" ? `${name} calls; showing the slowest` : "calls; showing the longest"}`;
    if (found.longest) await this.select(this.selected, found.longest.event, true);
  }

  selectRange(x0: number, x1: number, done: boolean): void {
    const [lo, hi] = [toNs(this.view, Math.min(x0, x1)), toNs(this.view, Math.max(x0, x1))];
    this.marks.range = [lo, hi];
    this.draw();
    if (done) {
      const measure: [number, number] = [Math.floor(lo), Math.max(Math.ceil(hi), Math.floor(lo) + 1)];
      this.marks.range = measure;
      this.host.store.timeline({ measure });
      void this.summarize(...measure);
    }
  }

  private async summarize(lo: number, hi: number): Promise<void> {
    const shift = this.ranks[this.selected].shift;
    const params = { ...this.host.sel, start_ns: String(lo - shift), end_ns: String(Math.max(hi, lo + 1) - shift) };
    try {
      const summary = await getJSON<TimelineSummaryResponse>("timeline_summary", params, this.host.signal);
      this.side.querySelector("#timeline-summary")?.remove();
      this.side.append(summaryPanel(summary, this));
    } catch (err) {
      if ((err as Error).name !== "AbortError") this.status.textContent = errorText(err);
    }
  }
}

async function rankViews(host: ViewHost): Promise<{ views: RankView[]; list: TimelineRank[]; selected: number; errors: string[] }> {
  const options = host.store.state.timeline;
  const { ranks, selected, errors } = await loadRanks(host.sel, options.ranks, host.signal);
  const sels: Selection[] = ranks.length ? ranks.map((r) => ({ run: host.sel.run, worker: r.worker, window: r.window })) : [host.sel];
  const tracks = await Promise.all(sels.map((sel) => loadTracks(sel, host.signal, true, (text) => showLoading(host, `Timeline: ${text}`))));
  const clocks = ranks.length && options.align === "collectives" ? await pathClocks(host.sel, host.signal) : null;
  const offsets = ranks.length ? shifts(ranks, selected, options.align, clocks ?? undefined) : [0];
  const views = sels.map((sel, i) => ({
    sel, tracks: tracks[i].tracks, shift: offsets[i], collapsed: false, folded: foldedAtFirst(tracks[i].tracks), tile: null, counters: null,
    openGroups: openAtFirst(tracks[i].tracks), pending: tracks[i].pending,
    label: `rank ${tracks[i].tracks.rank} · ${sel.worker}`,
  }));
  return { views, list: ranks, selected: ranks.length ? selected : 0, errors };
}

async function load(host: ViewHost): Promise<void> {
  showLoading(host, "Indexing the events of this window for the timeline…");
  try {
    const { views, list, selected, errors } = await rankViews(host);
    if (host.signal.aborted) return;
    new TimelinePanel(host, views, list, selected, errors).show();
  } catch (err) {
    if (!host.signal.aborted && (err as Error).name !== "AbortError") showError(host, errorText(err));
  }
}

export const timelineView: ViewDef = {
  id: "timeline",
  title: "Timeline",
  mount(host) {
    void load(host);
  },
};
