// The allocator's memory snapshot of a window (issue 41), inside the Memory view: the state at the snapshot
// (reserved / allocated / fragmentation / largest free block), the empty_cache() warning, the requested and
// reserved bytes over the history (a bounded series from the server), the top live allocations at the peak with
// their stacks, growth per step, leaks and OOMs. Every figure comes from /memory_snapshot*; nothing is computed here.
import {
  getJSON,
  windowParams,
  type SnapshotBandsResponse,
  type SnapshotBlock,
  type SnapshotDevice,
  type SnapshotEntryState,
  type SnapshotGroup,
  type SnapshotGrowth,
  type SnapshotLeak,
  type SnapshotRankRow,
  type SnapshotRanksResponse,
  type SnapshotResponse,
  type SnapshotSeriesResponse,
} from "../api";
import { PALETTE, RawChart } from "../chart";
import { h } from "../dom";
import { bytes, int, mb, pct } from "../format";
import { card, errorText, kvTable, SortTable, type Col } from "./common";
import type { ViewHost } from "./view";

const MB = 1048576;
const SERIES_POINTS = 1500;

/** How many snapshots the selected window has (/runs). */
export function snapshotCount(host: ViewHost): number {
  const worker = host.run?.workers.find((w) => w.name === host.sel.worker);
  return worker?.windows.find((w) => w.id === host.sel.window)?.snapshots ?? 0;
}

const GROUP_COLS: Col<SnapshotGroup>[] = [
  { key: "frame", label: "Top user frame", value: (g) => g.frame, cls: "name" },
  { key: "bytes", label: "Live at the peak (MB)", num: true, value: (g) => g.bytes / MB, fmt: (g) => mb(g.bytes) },
  { key: "blocks", label: "Blocks", num: true, value: (g) => g.blocks, fmt: (g) => int(g.blocks) },
];
const GROWTH_COLS: Col<SnapshotGrowth>[] = [
  { key: "step", label: "Step", num: true, value: (g) => g.step, fmt: (g) => String(g.step) },
  { key: "grown", label: "Grown (MB)", num: true, value: (g) => g.grown / MB, fmt: (g) => mb(g.grown), tip: "Bytes allocated in the step and still alive at its end" },
  { key: "live_end", label: "Live at its end (MB)", num: true, value: (g) => g.live_end / MB, fmt: (g) => mb(g.live_end) },
  { key: "top", label: "Grown most at", value: (g) => g.by_frame[0]?.frame ?? "", cls: "name" },
];

function stackList(stack: string[]): HTMLElement {
  return h("ol", { class: "stack" }, ...stack.map((frame) => h("li", { text: frame })));
}

function blockDetails(block: SnapshotBlock): HTMLElement {
  const op = block.operator ? ` · ${block.operator}` : "";
  return h("details", { class: "snap-block" }, h("summary", { text: `${bytes(block.bytes)} · ${block.frame}${op}` }), stackList(block.stack));
}

function leakCard(leaks: SnapshotLeak[]): HTMLElement | null {
  if (!leaks.length) return null;
  return h(
    "div",
    { id: "snap-leaks", class: "notice warn", role: "note" },
    h("strong", { text: "Memory that grows every step and is never freed: " }),
    ...leaks.map((leak) =>
      h("details", {}, h("summary", { text: `${leak.frame}: ${leak.bytes_per_step.map(bytes).join(", ")} in steps ${leak.steps.join(", ")}` }), stackList(leak.stack)),
    ),
  );
}

function findingsCard(dev: SnapshotDevice): HTMLElement | null {
  if (!dev.findings.length) return null;
  return card(
    "Findings (gains in bytes)",
    h(
      "ul",
      { id: "snap-findings", class: "findings" },
      ...dev.findings.map((f) =>
        h("li", { class: f.severity, "data-rule": f.rule }, h("strong", { text: f.title }), h("p", { text: `${f.detail} Gain: ${f.gain}.` }), h("p", { class: "meta", text: `Change: ${f.change_torch}. torch_npu: ${f.change_npu}.` })),
      ),
    ),
  );
}

function stateTable(dev: SnapshotDevice): HTMLTableElement {
  const s = dev.at_snapshot;
  const peak = dev.peak;
  return kvTable("snap-state", [
    ["Reserved (MB)", mb(s.reserved), "Sum of the segments' sizes at the snapshot"],
    ["Allocated (MB)", mb(s.allocated), "Bytes of the blocks in use (rounded block sizes)"],
    ["Requested (MB)", mb(s.requested), "Bytes the live tensors asked for"],
    ["Fragmentation (%)", pct(s.fragmentation), "1 - requested / reserved: free blocks and rounding"],
    ["Largest free block (MB)", mb(s.largest_free_block), "The biggest inactive block: the largest request served without a new segment"],
    ["Segments", `${int(s.segments)}${s.expandable_segments ? ` (${int(s.expandable_segments)} expandable)` : ""}`],
    ["Peak requested in the history (MB)", mb(peak.requested), `At entry ${peak.entry} of ${dev.entries}`],
    ["Reserved at the peak (MB)", mb(peak.reserved)],
    ["From before the history (MB)", mb(peak.before_history), "Alive at the peak, allocated before the history began: no stack"],
  ]);
}

class SnapshotChart {
  readonly raw: RawChart;
  constructor(el: HTMLElement, series: SnapshotSeriesResponse, peakEntry: number) {
    this.raw = new RawChart(el);
    const pair = (values: number[]) => values.map((v, i) => [series.entry[i], v / MB]);
    this.raw.set({
      tooltip: { trigger: "axis" },
      legend: { top: 0 },
      grid: { left: 60, right: 20, top: 30, bottom: 40 },
      xAxis: { type: "value", name: "history entry", nameLocation: "middle", nameGap: 25, min: 0 },
      yAxis: { type: "value", name: "MB" },
      series: [
        { name: "Requested", type: "line", showSymbol: false, step: "end", data: pair(series.requested), markLine: { symbol: "none", data: [{ xAxis: peakEntry, name: "peak" }] } },
        { name: "Reserved", type: "line", showSymbol: false, step: "end", data: pair(series.reserved) },
      ],
    });
  }
}

const RANK_COLS: Col<SnapshotRankRow>[] = [
  { key: "rank", label: "Rank", num: true, value: (r) => r.rank, fmt: (r) => (r.rank >= 0 ? String(r.rank) : "–") },
  { key: "worker", label: "Worker", value: (r) => r.worker, cls: "name", title: (r) => r.error ?? r.file },
  { key: "peak", label: "Peak requested (MB)", num: true, value: (r) => r.peak_requested / MB, fmt: (r) => mb(r.peak_requested) },
  { key: "reserved", label: "Reserved (MB)", num: true, value: (r) => (r.reserved ?? -1) / MB, fmt: (r) => mb(r.reserved ?? -1) },
  { key: "frag", label: "Fragmentation (%)", num: true, value: (r) => r.fragmentation ?? -1, fmt: (r) => pct(r.fragmentation ?? -1) },
  { key: "grown", label: "Grown in the last step (MB)", num: true, value: (r) => (r.last_step_grown ?? -1) / MB, fmt: (r) => mb(r.last_step_grown ?? -1) },
  { key: "leaks", label: "Leaks", num: true, value: (r) => r.leaks ?? -1, fmt: (r) => int(r.leaks ?? -1) },
];

/** The ranks side by side, when more than one worker of the run has a snapshot at this window's position. */
async function ranksCard(host: ViewHost): Promise<HTMLElement | null> {
  const workers = host.run?.workers ?? [];
  const position = workers.find((w) => w.name === host.sel.worker)?.windows.findIndex((w) => w.id === host.sel.window) ?? -1;
  const withSnapshots = workers.filter((w) => (w.windows[position]?.snapshots ?? 0) > 0);
  if (position < 0 || withSnapshots.length < 2) return null;
  const data = await getJSON<SnapshotRanksResponse>("memory_snapshot_ranks", { run: host.sel.run, window_index: String(position) }, host.signal);
  const table = new SortTable<SnapshotRankRow>("snap-ranks", RANK_COLS, "rank", false);
  table.setRows(data.ranks);
  const notes = data.findings.map((f) => h("p", { class: "notice warn", text: `${f.title}: ${f.detail} Gain: ${f.gain}.` }));
  return card("Ranks side by side", h("div", { class: "table-wrap short" }, table.el), ...notes);
}

const BANDS = 800;

/** The allocation timeline: the largest allocations alive in the history as bands (alloc to free) on lanes,
 * coloured by top user frame; the server chooses and lays them out (/memory_snapshot_bands). */
class BandsChart {
  readonly raw: RawChart;
  constructor(el: HTMLElement, b: SnapshotBandsResponse) {
    this.raw = new RawChart(el, "canvas");
    const data = b.alloc.map((a, i) => [a, b.free[i], b.lane[i], b.bytes[i], b.frame[i]]);
    this.raw.set({
      tooltip: {
        formatter: (p: { value: number[] }) =>
          `${bytes(p.value[3])} · ${b.frames[p.value[4]] ?? ""}<br>entries ${p.value[0]} – ${p.value[1] >= b.entries ? "never freed" : p.value[1]}`,
      },
      grid: { left: 40, right: 20, top: 10, bottom: 40 },
      xAxis: { type: "value", name: "history entry", nameLocation: "middle", nameGap: 25, min: 0, max: b.entries },
      yAxis: { type: "value", min: 0, max: Math.max(1, b.lanes), show: false },
      dataZoom: [{ type: "inside", xAxisIndex: 0 }],
      series: [
        {
          type: "custom",
          encode: { x: [0, 1], y: 2 },
          data,
          renderItem: (params: unknown, api: { value: (i: number) => number; coord: (v: number[]) => number[]; size: (v: number[]) => number[] }) => {
            const start = api.coord([api.value(0), api.value(2)]);
            const end = api.coord([api.value(1), api.value(2)]);
            const height = Math.max(1, api.size([0, 1])[1] * 0.8);
            return {
              type: "rect",
              shape: { x: start[0], y: start[1] - height, width: Math.max(1, end[0] - start[0]), height },
              style: { fill: PALETTE[api.value(4) % PALETTE.length] },
            };
          },
        },
      ],
    });
  }
}

/** The allocator's state after any entry of the history (/memory_snapshot_state), the peak's first. */
function stateAtCard(host: ViewHost, dev: SnapshotDevice): HTMLElement {
  const input = h("input", { id: "snap-entry", type: "number", min: 0, max: Math.max(0, dev.entries - 1), value: Math.max(0, dev.peak.entry), "aria-label": "History entry" });
  const go = h("button", { type: "button", id: "snap-entry-go", class: "button", text: "Show" });
  const out = h("div", { id: "snap-entry-state", "data-state": "" });
  const show = async () => {
    out.dataset.state = "loading";
    try {
      const s = await getJSON<SnapshotEntryState>("memory_snapshot_state", { ...windowParams(host.sel), device: String(dev.device), entry: String(input.value) }, host.signal);
      out.replaceChildren(
        kvTable("snap-entry-table", [
          ["Entry", String(s.entry)],
          ["Segments", int(s.segments)],
          ["Reserved (MB)", mb(s.reserved)],
          ["Requested (MB)", mb(s.requested)],
          ["Fragmentation (%)", pct(s.fragmentation)],
          ["Largest free block, at most (MB)", mb(s.largest_free_block_at_most), "The history gives requested sizes, not the rounded blocks: an upper bound"],
          ["Live blocks", int(s.blocks)],
        ]),
      );
      out.dataset.state = "loaded";
    } catch (err) {
      if ((err as Error).name === "AbortError") return;
      out.replaceChildren(h("p", { class: "error-text", text: errorText(err) }));
      out.dataset.state = "error";
    }
  };
  go.onclick = () => void show();
  void show();
  return card("Allocator state after an entry of the history", h("div", { class: "toolbar" }, h("label", {}, "Entry ", input), go), out);
}

/** The snapshot's cards for one device, or an error notice; `charts` collects the charts to dispose. */
export async function snapshotSection(host: ViewHost, charts: RawChart[]): Promise<HTMLElement> {
  const box = h("section", { id: "memory-snapshot", class: "snapshot", "data-state": "loading" }, h("h2", { class: "section-title", text: "Allocator snapshot" }));
  try {
    const data = await getJSON<SnapshotResponse>("memory_snapshot", { ...windowParams(host.sel), limit: "20" }, host.signal);
    const dev = data.devices[0];
    if (!dev) {
      box.append(h("p", { class: "meta", text: `${data.file}: no device in this snapshot.` }));
      box.dataset.state = "empty";
      return box;
    }
    const series = await getJSON<SnapshotSeriesResponse>(
      "memory_snapshot_series",
      { ...windowParams(host.sel), device: String(dev.device), points: String(SERIES_POINTS) },
      host.signal,
    );
    const chartEl = h("div", { id: "snap-chart", class: "chart", "data-points": series.entry.length });
    const frames = new SortTable<SnapshotGroup>("snap-by-frame", GROUP_COLS, "bytes");
    frames.setRows(dev.peak.by_frame, "No traced block alive at the peak.");
    const growth = new SortTable<SnapshotGrowth>("snap-growth", GROWTH_COLS, "step", false);
    growth.setRows(dev.growth, "No steps found in the history.");
    const warn = dev.empty_cache.empty_cache_calls
      ? h("div", { id: "snap-empty-cache", class: "notice warn", role: "note" }, h("strong", { text: `empty_cache() was called ${int(dev.empty_cache.empty_cache_calls)} times, releasing ${bytes(dev.empty_cache.empty_cache_bytes)}. ` }), dev.empty_cache.warning)
      : null;
    const ooms = dev.ooms.length
      ? h("div", { id: "snap-oom", class: "notice error", role: "note" }, ...dev.ooms.map((o) => h("p", { text: `Out of memory at entry ${o.entry}: asked ${bytes(o.requested)}, the device had ${bytes(o.device_free)} free (${bytes(o.reserved)} reserved) · ${o.frame}` })))
      : null;
    box.append(
      h("p", { id: "snap-meta", class: "meta", text: `${data.file} (${data.flavour}) · device ${dev.device} · ${int(dev.entries)} history entries · ${dev.join} · steps: ${dev.steps_source}` }),
      ...[warn, ooms, leakCard(dev.leaks), findingsCard(dev)].filter((el): el is HTMLElement => !!el),
      h("div", { class: "grid-mem" }, card("Requested and reserved over the history (MB)", chartEl), card("Allocator state", stateTable(dev))),
      card("Live at the peak, by top user frame", h("div", { class: "table-wrap short" }, frames.el)),
      card("Largest live allocations at the peak", h("div", { id: "snap-top-blocks" }, ...dev.peak.top_blocks.map(blockDetails))),
      card("Growth per step", h("div", { class: "table-wrap short" }, growth.el)),
      stateAtCard(host, dev),
    );
    charts.push(new SnapshotChart(chartEl, series, dev.peak.entry).raw);
    const bands = await getJSON<SnapshotBandsResponse>(
      "memory_snapshot_bands",
      { ...windowParams(host.sel), device: String(dev.device), limit: String(BANDS) },
      host.signal,
    );
    const bandsEl = h("div", { id: "snap-bands", class: "chart tall", "data-bands": bands.shown, "data-lanes": bands.lanes });
    box.append(
      card(
        `Allocation timeline: the ${int(bands.shown)} largest of the ${int(bands.alive)} allocations of the history (${bytes(bands.shown_bytes)} of the ${bytes(bands.alive_bytes)} they allocated over time)`,
        bandsEl,
      ),
    );
    charts.push(new BandsChart(bandsEl, bands).raw);
    const ranks = await ranksCard(host);
    if (ranks) box.append(ranks);
    box.dataset.state = "loaded";
  } catch (err) {
    if ((err as Error).name === "AbortError") return box;
    box.append(h("div", { id: "snap-error", class: "notice error", role: "alert", text: `Cannot read the memory snapshot: ${errorText(err)}` }));
    box.dataset.state = "error";
  }
  return box;
}
