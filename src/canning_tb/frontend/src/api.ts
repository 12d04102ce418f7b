// The plugin's routes: how to fetch them and every response type, in one place (docs/http_api.md
// describes the routes). URLs are relative: the iframe's <base href="plugin/canning/"> makes them
// work under /data/plugin/canning/ and under --path_prefix.
//
// The interfaces named after a message of analysis/digest.proto (Breakdown, OpStat, ...) mirror it
// field for field, with its names: the routes send those messages whole (digest_json.to_plain).
// tests/frontend/test_frontend_types.py fails when one of them differs from the schema. Numbers: times are
// int ns (relative to the window start where the route says so), sizes bytes, -1 = absent; a
// proto double is `number | null` (NaN and infinities travel as null).

// -- digest messages (analysis/digest.proto) --------------------------------------------------------

export interface CannStep {
  step: number;
  computing_ns: number;
  communication_not_overlapped_ns: number;
  overlapped_ns: number;
  communication_ns: number;
  free_ns: number;
  stage_ns: number;
  bubble_ns: number;
  communication_not_overlapped_exclude_receive_ns: number;
  preparing_ns: number;
  source: string;
}

export interface Device {
  kind: string;
  index: number;
  name: string;
  memory_bytes: number;
  compute_capability: string;
  properties: Record<string, string>;
}

export interface WindowInfo {
  format: string;
  rank: number;
  world_size: number;
  worker: string;
  host: string;
  pid: number;
  start_ns: number;
  end_ns: number;
  devices: Device[];
  environment: Record<string, string>;
  source_files: string[];
}

export interface Breakdown {
  total_ns: number;
  compute_ns: number;
  overlapped_ns: number;
  communication_ns: number;
  memcpy_ns: number;
  memset_ns: number;
  runtime_ns: number;
  dataloader_ns: number;
  host_ns: number;
  idle_ns: number;
  device_wait_ns: number;
}

export interface Step {
  number: number;
  start_ns: number;
  dur_ns: number;
  breakdown: Breakdown;
  tail_ns: number;
  distorted: boolean;
}

export interface KernelRef {
  name: string;
  calls: number;
  total_ns: number;
}

export interface OpStat {
  name: string;
  input_shapes: string;
  call_stack: string;
  calls: number;
  host_self_ns: number;
  host_total_ns: number;
  device_self_ns: number;
  device_total_ns: number;
  host_total_min_ns: number;
  host_total_max_ns: number;
  kernels: KernelRef[];
  has_call_stack: boolean;
  tc_eligible: boolean;
  tc_self_share: number | null; // share of its own kernels' time on Tensor Cores, -1 unknown
  tc_total_share: number | null; // ... of the kernels under it, each once
}

export interface KernelStat {
  name: string;
  op_name: string;
  calls: number;
  total_ns: number;
  min_ns: number;
  max_ns: number;
  device: number;
  stream: number;
  core: string;
  mean_blocks: number | null;
  tensor_cores: boolean;
  communication: boolean;
  mean_blocks_per_sm: number | null; // -1: the trace does not carry it
  mean_occupancy_pct: number | null;
  registers_per_thread: number | null;
  shared_memory_bytes: number | null;
  pmu: Record<string, number | null>; // NPU PMU ratios over the kernel's tasks
  mean_mix_block_dim: number | null;
}

/** One GPU's efficiency figures over the steps the average keeps; -1 where unknown. */
export interface GpuEfficiency {
  device: number;
  name: string;
  span_ns: number;
  busy_ns: number;
  utilization: number | null;
  sm_efficiency: number | null;
  achieved_occupancy_pct: number | null;
  tensor_core_share: number | null;
  kernels: number;
  kernels_with_blocks_per_sm: number;
  kernels_with_occupancy: number;
}

export interface NpuPmuMetric {
  name: string;
  value: number | null;
  tasks: number;
}

/** One NPU's efficiency figures: AI Core utilisation, time per core type, PMU ratios. */
export interface NpuEfficiency {
  device: number;
  name: string;
  span_ns: number;
  ai_core_busy_ns: number;
  ai_core_utilization: number | null;
  cube_ns: number;
  vector_ns: number;
  mix_ns: number;
  ai_cpu_ns: number;
  cube_share: number | null;
  pmu: NpuPmuMetric[];
}

/** One nn.Module instance path and its times over its calls. */
export interface ModuleNode {
  name: string;
  path: string;
  depth: number;
  parent: number; // index in the list, -1 for a root
  calls: number;
  host_total_ns: number;
  host_self_ns: number;
  device_total_ns: number;
  device_self_ns: number;
  operators: number;
  first_start_ns: number;
}

export interface CoreStat {
  core: string;
  calls: number;
  total_ns: number;
}

export interface MemoryEvent {
  op: string;
  bytes: number;
  alloc_ns: number;
  free_ns: number;
}

export interface OpMemoryStat {
  name: string;
  allocations: number;
  allocated_bytes: number;
  self_allocations: number;
  self_allocated_bytes: number;
  increase_bytes: number;
  self_increase_bytes: number;
}

export interface ComponentMemory {
  component: string;
  peak_reserved_bytes: number;
  peak_allocated_bytes: number;
}

export interface DeviceMemory {
  device: string;
  curve_ts_ns: number[];
  curve_allocated_bytes: number[];
  curve_reserved_bytes: number[];
  curve_active_bytes: number[];
  peak_allocated_bytes: number;
  peak_ts_ns: number;
  peak_reserved_bytes: number;
  capacity_bytes: number;
  allocations: number;
  frees: number;
  allocated_bytes: number;
  events: MemoryEvent[];
  events_truncated: boolean;
  ops: OpMemoryStat[];
  components: ComponentMemory[];
  empty_cache_calls: number;
}

export interface CollectiveStat {
  kind: string;
  group: string;
  calls: number;
  total_ns: number;
  min_ns: number;
  max_ns: number;
  bytes: number;
  bandwidth_gbps: number | null;
  wait_ns: number;
  transfer_ns: number;
  comm_type: string;
  synchronization_ns: number;
  transit_bytes: number;
  source: string;
}

export interface CommCall {
  kind: string;
  group: string;
  start_ns: number;
  dur_ns: number;
  bytes: number;
  step: number;
  op: string;
  seq: number;
  comm_type: string;
  wait_ns: number;
  transit_ns: number;
  synchronization_ns: number;
}

export interface Link {
  src: number;
  dst: number;
  transport: string;
  bytes: number;
  time_ns: number;
  bandwidth_gbps: number | null;
  op: string;
}

export interface Communication {
  total_ns: number;
  not_overlapped_ns: number;
  overlapped_ns: number;
  wait_ns: number;
  transfer_ns: number;
  not_overlapped_share: number | null;
  collectives: CollectiveStat[];
  calls: CommCall[];
  links: Link[];
  calls_truncated: boolean;
  source: string;
  synchronization_ns: number;
  p2p_wait_ns: number;
  groups: CommGroup[];
}

export interface CommGroup {
  group: string;
  name: string;
  ranks: number[];
  rank_in_group: number;
  source: string;
  label: string;
  members: number;
}

export interface Problem {
  file: string;
  message: string;
  severity: string;
}

export interface RuleHit {
  rule: string;
  severity: string;
  title: string;
  detail: string;
  value: number | null;
  category: string; // time | compute | communication | memory | profiling
  seen: string;
  why: string;
  change_torch: string;
  change_npu: string;
  gain_ns: number; // upper bound per step (or an estimate, see `gain`), -1 unknown
  speedup: number | null; // step / (step - gain_ns), -1 unknown
  gain: string;
  evidence: Evidence[];
  needs: string; // the rule could not judge: the profiler setting that would enable it
  figures: Record<string, number | null>;
  device: string;
  claim: Claim; // the finding as data, checked against the views (docs/rules.md "Claims")
}

/** What a finding claims: the figure it rests on (a glossary key, as its view shows it), the floors it
 * passed, the time per step it would remove, and the findings that claim part of the same time. */
export interface Claim {
  figure: string;
  value: number | null; // shares as fractions, times in ns; null none
  view: string;
  threshold: number | null;
  floor_ns: number; // a gain under this (a share of the step) is not reported
  noise_ns: number; // the variation the data shows, -1 unknown
  removes_ns: number; // -1 unknown
  removes: string[];
  shared: SharedTime[];
  step_ns: number;
  steps: number;
  scope: string; // "window" | "ranks"
  ranks: number[];
}

/** Time per step that another finding claims too. */
export interface SharedTime {
  rule: string;
  title: string;
  ns: number;
}

/** A row of a view's table and / or a place in the Timeline a finding rests on. */
export interface Evidence {
  view: string;
  row: string;
  label: string;
  timeline_name: string;
  ts_ns: number; // window-relative in /suggestions, -1 none
  dur_ns: number;
  rank: number;
}

// -- routes ------------------------------------------------------------------------------------------

/** GET /runs */
export interface WindowEntry {
  id: string;
  label: string;
  format: string;
  status: string;
  files: string[];
}
export interface WorkerEntry {
  name: string;
  rank: number;
  windows: WindowEntry[];
}
export interface RunEntry {
  name: string;
  workers: WorkerEntry[];
}
export interface RunsResponse {
  logdir: string | null;
  loading: boolean;
  error: string | null;
  runs: RunEntry[];
}

/** The part every per-window route starts with. */
export interface WindowHead {
  run: string;
  worker: string;
  window: string;
  info: WindowInfo & { duration_ns: number };
  problems: Problem[];
}

/** /overview `figures`: the window's headline figures, computed in analysis (one function for
 * /overview and /cluster's per_rank rows). */
export interface MemoryFigure {
  device: string;
  peak_bytes: number;
  capacity_bytes: number; // -1 unknown
}
export interface SlowestOp {
  name: string;
  ns: number;
  metric: "device_self_ns" | "host_self_ns";
  share: number; // of that metric summed over all operators but ProfilerStep#*
}
export interface WindowFigures {
  steps: number;
  total_step_ns: number;
  average_step_ns: number;
  compute_share: number | null;
  comm_not_hidden_share: number | null;
  dataloader_share: number | null;
  idle_share: number | null; // nothing recorded (the breakdown's Idle)
  device_idle_share: number | null; // the step minus the device's busy time; null without device work
  compute_source: string; // "host" on windows without device work: the host operators are the computation
  memory: MemoryFigure[];
  slowest_op: SlowestOp | null;
}

/** GET /overview */
export interface OverviewResponse extends WindowHead {
  schema_version: number;
  steps: Step[];
  average: Breakdown;
  scalars: Record<string, number | null>;
  rule_hits: RuleHit[];
  figures: WindowFigures;
  gpu_efficiency: GpuEfficiency[];
  npu_efficiency: NpuEfficiency[];
}

export type GroupBy = "name" | "shape" | "stack";

/** GET /operators?group_by= */
/** The page a paged table answers (analysis/table_page.py): rows [offset, offset + limit) of `total`. */
export interface TablePage {
  total: number; // rows that match the search
  offset: number;
  limit: number;
  sort: string | null;
  order: "asc" | "desc" | null;
  search: string;
}

/** GET /operators: one page of the rows (sort, order, search, offset, limit asked) */
export interface OperatorsResponse extends WindowHead, TablePage {
  group_by: GroupBy;
  has_device: boolean;
  has_stacks: boolean;
  all_rows: number; // rows of the group, search or not
  rows: OpStat[];
}

/** GET /operators?detail=<name>[&shapes=] */
export interface OperatorDetailResponse {
  run: string;
  worker: string;
  window: string;
  name: string;
  input_shapes: string | null;
  stacks_by_shape: boolean; // false: the digest groups stacks by name only
  calls: number;
  stacks: Omit<OpStat, "kernels">[];
  kernels: KernelRef[];
}

/** GET /kernels */
export interface KernelsResponse extends WindowHead, TablePage {
  kernels_by_name: KernelStat[];
  kernels_by_name_all: number;
  kernels_by_op: KernelStat[];
  kernels_by_op_total: number;
  kernels_by_op_all: number;
  cores: CoreStat[];
  total_ns: number; // device time of all kernels: the share column's denominator
}

/** GET /modules */
export interface ModulesResponse extends WindowHead {
  modules: ModuleNode[]; // depth first; empty without nn.Module events
}

/** GET /memory */
export interface MemoryResponse extends WindowHead {
  devices: DeviceMemory[];
}

/** GET /memory_range: the allocations of one device inside [start_ns, end_ns], per operator. */
export interface RangeOp {
  name: string;
  allocations: number;
  bytes: number;
  max_bytes: number;
  freed: number;
}
export interface MemoryRangeResponse {
  device: string;
  start_ns: number | null;
  end_ns: number | null;
  events: MemoryEvent[];
  events_total: number;
  events_truncated: boolean;
  ops: RangeOp[];
}

/** GET /communication */
/** This rank's communication over one step, the mean step or the window (analysis/summary.py
 * communication_figures; wait / transfer: analysis/communication/wait_transfer.py, -1 unknown). */
export interface CommFigureRow {
  dur_ns: number;
  total_ns: number;
  overlapped_ns: number;
  not_overlapped_ns: number;
  not_overlapped_share: number | null;
  wait_ns: number;
  p2p_wait_ns: number;
  transfer_ns: number;
}
export interface StepCollective {
  kind: string;
  group: string;
  calls: number;
  total_ns: number;
  bytes: number;
}
export interface CommStepRow extends CommFigureRow {
  step: number;
  collectives: StepCollective[];
}
export interface CommFigures {
  mean: CommFigureRow;
  window: CommFigureRow;
  steps: CommStepRow[];
  calls_truncated: boolean;
}
export interface CommunicationResponse extends WindowHead {
  communication: Communication;
  figures: CommFigures;
}

/** GET /cluster while the ranks' windows are being digested (HTTP 202). */
export interface ClusterLoading {
  loading: true;
  done: number;
  total: number;
}
export interface ClusterMember {
  worker: string;
  rank: number;
  window: string;
  digest_rank: number;
  cluster_rank: number; // the rank id of this worker in `ranks` (positions when the digests' ranks repeat)
}
export interface ClusterProblem {
  worker: string;
  window: string;
  message: string;
}
/** One rank over one step (or the mean step): the split and wait / transfer (analysis/communication/wait_transfer.py). */
export interface RankSplit {
  step_ns: number;
  compute_ns: number;
  overlapped_ns: number;
  communication_ns: number;
  other_ns: number;
  communication_total_ns: number;
  wait_ns: number;
  p2p_wait_ns: number;
  transfer_ns: number;
}
export interface RankStep extends RankSplit {
  step: number;
  start_ns: number;
  dur_ns: number;
}
export interface RankRow extends RankSplit {
  rank: number;
  steps: number;
  per_step: RankStep[];
}
export interface SlowRank {
  metric: string;
  max_ns: number;
  min_ns: number;
  mean_ns: number;
  ratio: number;
  max_rank: number;
  min_rank: number;
  flagged: boolean;
  slowest_rank: number;
}
export interface MatrixCell {
  src: number;
  dst: number;
  bytes: number;
  time_ns: number;
  bandwidth_gbps: number | null;
  transports: string[];
}
export interface RankFigures {
  rank: number;
  worker: string;
  window: string;
  steps: number;
  step_ns: number;
  compute_share: number | null;
  comm_not_hidden_share: number | null;
  memory_device: string;
  memory_peak_bytes: number;
  memory_capacity_bytes: number;
  slowest_op: string;
  slowest_op_ns: number;
  slowest_op_metric: string;
}
export interface FigureRange {
  min: number;
  min_rank: number;
  max: number;
  max_rank: number;
}
export interface RunSummary {
  ranks: number;
  step_ns: FigureRange | null;
  compute_share: FigureRange | null;
  comm_not_hidden_share: FigureRange | null;
  memory_peak_bytes: FigureRange | null;
  slowest_op: { name: string; ns: number; rank: number; metric: string } | null;
}
/** How one figure spreads over the ranks (analysis/cluster_spread.py), the extreme and outlying ranks named. */
export interface RankValue {
  rank: number;
  value: number;
}
export interface RankOutlier extends RankValue {
  side: "high" | "low";
  score: number | null; // modified z-score; null when most ranks are equal (MAD 0)
}
export interface Distribution {
  metric: string;
  min: number;
  q1: number;
  median: number;
  q3: number;
  max: number;
  mean: number;
  histogram: { edges: number[]; counts: number[] };
  top: RankValue[];
  bottom: RankValue[];
  outliers: RankOutlier[];
  outliers_total: number;
}
export interface RankHeatmap {
  metrics: string[];
  ranks: number[];
  ratio_to_median: (number | null)[][]; // [metric][rank]: value / the metric's median
}
export interface MatrixBins {
  ranks_per_bin: number;
  bins: { first: number; last: number }[];
  cells: { src: number; dst: number; bytes: number; time_ns: number }[]; // src, dst: bin indexes
}
/** GET /cluster (HTTP 200) */
export interface ClusterResponse {
  run: string;
  window_index: number;
  workers: ClusterMember[];
  problems: ClusterProblem[];
  per_rank: RankFigures[];
  run_summary: RunSummary;
  ranks: RankRow[];
  collectives: { kind: string; group: string; calls: number; total_ns: number; wait_ns: number; transfer_ns: number }[];
  slow_ranks: SlowRank[];
  matrix_cells: MatrixCell[];
  matrix_truncated: boolean; // past 16,384 cells: the largest only (matrix_bins holds all)
  matrix_bins: MatrixBins;
  matrix_source: string;
  distributions: Distribution[];
  rank_heatmap: RankHeatmap;
  compute_source?: string; // "host" on CPU-only runs: the host operators are the computation
  unmatched: { kind: string; group: string; calls: Record<string, number> }[];
  findings: RuleHit[]; // cross-rank findings (analysis/rules/cluster_rules.py), ranked by estimated gain
}

/** GET /suggestions: the window's findings, ranked by estimated gain (analysis/rules). */
export interface SuggestionsResponse extends WindowHead {
  findings: RuleHit[];
}

// -- GET /compare (analysis/compare*.py): every time and count per step, times in ns ----------------------

export interface CompareWindow {
  run: string;
  worker: string;
  window: string;
  label: string;
  format: string;
  rank: number;
}
export interface CompareSide {
  windows: number;
  steps: number;
  step_ns: number;
  batch_size: number | null;
}
export interface Change {
  base: number | null;
  target: number | null;
  delta: number | null;
  delta_pct: number | null;
  text: string;
}
export interface Verdict {
  step_time: Change;
  memory_peak: Change;
  memory_device: string;
  comm_not_hidden: Change;
  comm_not_hidden_share: Change;
  throughput: Change;
  text: string;
}
export interface CategoryDelta {
  category: string;
  base_ns: number;
  target_ns: number;
  delta_ns: number;
}
export type CompareStatus = "added" | "removed" | "changed" | "same";
export interface CompareRow {
  key: string;
  input_shapes: string;
  call_stack: string;
  base_names: string[];
  target_names: string[];
  base_calls: number;
  target_calls: number;
  base_ns: number;
  target_ns: number;
  delta_ns: number;
  delta_pct: number | null;
  status: CompareStatus;
}
export interface Contributor {
  name: string;
  kind: "operator" | "category";
  delta_ns: number;
  status: CompareStatus;
}
export interface Contributors {
  step_delta_ns: number;
  operators: Contributor[];
  explained_ns: number;
  unexplained_ns: number;
}
export interface TreeNode {
  name: string;
  kind: "root" | "frame" | "op";
  base_ns: number;
  target_ns: number;
  base_calls: number;
  target_calls: number;
  delta_ns: number;
  status: CompareStatus;
  children: TreeNode[];
}
export interface MemoryPair {
  device: string;
  base_device: string;
  target_device: string;
  base_peak_bytes: number;
  target_peak_bytes: number;
  ratio: number | null;
  base_x: number[];
  base_bytes: number[];
  target_x: number[];
  target_bytes: number[];
}
export interface CollectiveDelta {
  kind: string;
  group: string;
  base_calls: number;
  target_calls: number;
  base_ns: number;
  target_ns: number;
  base_bytes: number;
  target_bytes: number;
  delta_ns: number;
  status: CompareStatus;
}
export interface CompareResponse {
  base_window: CompareWindow;
  target_window: CompareWindow;
  name_map: { file: string | null; problem: string | null };
  metric: "device" | "host";
  mode: GroupBy;
  base: CompareSide;
  target: CompareSide;
  verdict: Verdict;
  breakdown: CategoryDelta[];
  operators: CompareRow[];
  kernels: CompareRow[];
  kernel_families: CompareRow[];
  contributors: Contributors;
  tree: TreeNode;
  memory: MemoryPair[];
  communication: CollectiveDelta[];
  communication_by_kind: CollectiveDelta[];
}

// -- fetching ------------------------------------------------------------------------------------------

/** The window a per-window route is asked about. */
export interface Selection {
  run: string;
  worker: string;
  window: string;
}

export class ApiError extends Error {
  constructor(
    message: string,
    public status: number,
  ) {
    super(message);
  }
}

function errorOf(body: unknown, status: number): string {
  return body && typeof body === "object" && "error" in body ? String((body as { error: unknown }).error) : `HTTP ${status}`;
}

export async function getJSON<T>(route: string, params: Record<string, string> = {}, signal?: AbortSignal): Promise<T> {
  const query = new URLSearchParams(params).toString();
  const url = `./${route}${query ? `?${query}` : ""}`;
  let resp: Response;
  try {
    resp = await fetch(url, { signal, headers: { Accept: "application/json" } });
  } catch (err) {
    if ((err as Error).name === "AbortError") throw err;
    throw new ApiError(`Cannot reach TensorBoard (${(err as Error).message}). Is it still running?`, 0);
  }
  let body: unknown = null;
  try {
    body = await resp.json();
  } catch {
    body = null;
  }
  if (!resp.ok) throw new ApiError(errorOf(body, resp.status), resp.status);
  return body as T;
}

export function windowParams(sel: Selection): Record<string, string> {
  return { run: sel.run, worker: sel.worker, window: sel.window };
}

// -- the timeline's routes (/timeline_*; docs/http_api.md, "Timeline routes") ------------------------

export interface TimelineTrack {
  id: number;
  name: string;
  pid: number;
  tid: number;
  device: number;
  kind: "host" | "python" | "device";
  rows: number[];
  events: number;
}

export interface TimelineStep {
  number: number;
  start_ns: number;
  dur_ns: number;
}

/** /timeline_tracks while the window is still being read or indexed (HTTP 202) */
export interface TimelineTracksLoading {
  run: string;
  worker: string;
  window: string;
  loading: true;
  stage: "reading the trace" | "loading the events" | "indexing";
  elapsed_s: number;
  /** known once the window's digest is (what can be drawn already: the ruler and the steps) */
  rank?: number;
  start_ns?: number;
  duration_ns?: number;
  steps?: TimelineStep[];
}

export interface TimelineTracksResponse {
  run: string;
  worker: string;
  window: string;
  rank: number;
  start_ns: number;
  duration_ns: number;
  events: number;
  tracks: TimelineTrack[];
  steps: TimelineStep[];
  memory_devices: string[];
  /** the NPU's sampled counters (AI Core frequency, HBM / LLC bandwidth, NPU memory ...) */
  counters: TimelineCounterInfo[];
}

export interface TimelineCounterInfo {
  id: number;
  group: string;
  name: string;
  /** MHz, bytes, bytes/s, or the file's own unit ("%", "" for levels) */
  unit: string;
  device: string;
  /** the series' highest value in the window (the lane's scale) */
  max: number;
}

export interface TimelineTileHeader {
  start_ns: number;
  end_ns: number;
  width: number;
  rows: [number, number][];
  count: number;
  events_in_range: number;
  names: string[];
}

/** A decoded /timeline_tile answer: the header and one typed array per item column. */
export interface TimelineTile {
  header: TimelineTileHeader;
  start: Float64Array;
  dur: Float64Array;
  event: Int32Array;
  name: Int32Array;
  count: Uint32Array;
  row: Uint32Array;
  bytes: number;
}

export interface TimelineBrief {
  event: number;
  name: string;
  kind: string;
  start_ns: number;
  dur_ns: number;
  track: number;
  depth: number;
}

export interface TimelineSliceResponse extends TimelineBrief {
  category: string;
  self_ns: number;
  input_shapes: string;
  call_stack: string[];
  args: Record<string, string | number>;
  links: TimelineBrief[];
  /** every arg of the event as the trace file wrote it (null while pending, or where the file has none) */
  raw_args: Record<string, unknown> | null;
  /** "pending": the file is being read for them (ask again); "failed": it could not be */
  raw_args_state: "ready" | "pending" | "failed";
}

export interface TimelineSearchResponse {
  query: string;
  count: number;
  next: TimelineBrief | null;
  previous: TimelineBrief | null;
  longest: TimelineBrief | null;
  next_index: number | null;
}

export interface TimelineSummaryRow {
  name: string;
  total_ns: number;
  count: number;
}

export interface TimelineSummaryResponse {
  start_ns: number;
  end_ns: number;
  events: number;
  names: number;
  rows: TimelineSummaryRow[];
}

export interface TimelineCounter {
  device: string;
  measure: "allocated" | "reserved";
  ts_ns: number[];
  bytes: number[];
}

export interface TimelineNpuCounter {
  id: number;
  ts_ns: number[];
  values: number[];
}

export interface TimelineCountersResponse {
  start_ns: number;
  end_ns: number;
  memory: TimelineCounter[];
  npu: TimelineNpuCounter[];
}

export interface TimelineRank {
  worker: string;
  window: string;
  rank: number;
  start_ns: number;
  duration_ns: number;
  first_step_ns: number;
  offset_ns: number;
  /** set (and the figures absent) when this rank's files cannot be read */
  error?: string;
}

export interface TimelineRanksResponse {
  run: string;
  position: number;
  ranks: TimelineRank[];
}

export interface TimelinePeer {
  worker: string;
  window: string;
  rank: number;
  event: number;
  start_ns: number;
  clock_ns: number;
  dur_ns: number;
  track: number;
  depth: number;
  wait_ns: number;
  last: boolean;
}

export interface TimelinePeersResponse {
  collective: boolean;
  name: string;
  peers: TimelinePeer[];
}

/** Reads a /timeline_tile answer (layout: docs/http_api.md): JSON errors become ApiErrors. */
export async function getTile(params: Record<string, string>, signal?: AbortSignal): Promise<TimelineTile> {
  const resp = await fetch(`./timeline_tile?${new URLSearchParams(params).toString()}`, { signal });
  if (!resp.ok) {
    const body: unknown = await resp.json().catch(() => null);
    throw new ApiError(errorOf(body, resp.status), resp.status);
  }
  const buffer = await resp.arrayBuffer();
  const length = new DataView(buffer).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, length))) as TimelineTileHeader;
  const count = header.count;
  let offset = 4 + length;
  const take = <T>(make: (buf: ArrayBuffer, at: number, n: number) => T, size: number): T => {
    const array = make(buffer, offset, count);
    offset += size * count;
    return array;
  };
  return {
    header,
    start: take((b, at, n) => new Float64Array(b, at, n), 8),
    dur: take((b, at, n) => new Float64Array(b, at, n), 8),
    event: take((b, at, n) => new Int32Array(b, at, n), 4),
    name: take((b, at, n) => new Int32Array(b, at, n), 4),
    count: take((b, at, n) => new Uint32Array(b, at, n), 4),
    row: take((b, at, n) => new Uint32Array(b, at, n), 4),
    bytes: buffer.byteLength,
  };
}
