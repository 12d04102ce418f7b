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
  untraced_wait_ns: number; // the host's wait for device work queued before the window
  roofline: StepRoofline;
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
  work: WorkRates; // FLOPs, bytes, rates against the roofs (model "" = no model: every figure unknown)
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
  family: string; // matmul, convolution, attention, communication, optimizer...: by launcher, category, then name
  mean_blocks_per_sm: number | null; // -1: the trace does not carry it
  mean_occupancy_pct: number | null;
  registers_per_thread: number | null;
  shared_memory_bytes: number | null;
  pmu: Record<string, number | null>; // NPU PMU ratios over the kernel's tasks
  mean_mix_block_dim: number | null;
  work: WorkRates;
  pipes: PipeShare[]; // NPU PMU: busy share per pipe, busiest first
}

/** The work of a row against its device's roofs (docs/efficiency.md); -1 / "" unknown. */
export interface WorkRates {
  flops: number | null;
  bytes: number | null;
  model: string;
  dtype: string;
  time_ns: number;
  tflops: number | null;
  gbps: number | null;
  intensity: number | null;
  roof_tflops: number | null;
  roof_share: number | null;
  bound: string;
  matrix: boolean;
}

export interface PipeShare {
  pipe: string;
  share: number | null;
}

export interface StepRoofline {
  flops: number | null;
  mfu: number | null;
  hbm_gbps: number | null;
}

export interface ModuleRoofline {
  flops: number | null;
  mfu: number | null;
}

export interface DevicePeak {
  device: number;
  kind: string;
  name: string;
  matched: string;
  tflops: Record<string, number | null>;
  vector_tflops: number | null;
  hbm_gbps: number | null;
  source: string;
  note: string;
  /** "chosen" (URL / CLI) | "manifest" | "setting" (CANNING_DEVICE_PEAKS) | "files" | "" */
  origin?: string;
}

export interface RooflinePoint {
  kind: string;
  name: string;
  input_shapes: string;
  calls: number;
  work: WorkRates;
}

/** The digest's roofline section: peaks, MFU, HBM bandwidth, the points of the Roofline view. */
export interface Roofline {
  peaks: DevicePeak[];
  device: number;
  mfu: number | null;
  flops_per_step: number | null;
  hbm_gbps: number | null;
  hbm_source: string;
  hbm_share: number | null;
  modelled_share: number | null;
  points: RooflinePoint[];
  notes: string[];
  steps: number;
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
  roofline: ModuleRoofline;
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
  peer?: number; // Send / Recv: the other side's rank in the call's group; absent where the trace does not say
}

export interface Link {
  src: number;
  dst: number;
  transport: string;
  bytes: number;
  time_ns: number;
  bandwidth_gbps: number | null;
  op: string;
  group: string; // the communicator of the cell set
  numbering: string; // "communicator": src / dst are member indices inside `group` (as the file writes them)
}

export interface Communication {
  total_ns: number;
  not_overlapped_ns: number;
  overlapped_ns: number;
  wait_ns: number;
  transfer_ns: number;
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
  comm_name: string; // the name the metadata declared it under, when the calls carry its hash
}

/** Where a window's figures come from (analysis/coverage.py). */
export interface SourceFile {
  file: string;
  covers: string;
  rows: number;
  of_rows: number;
  sampled: boolean; // holds a part of the window only
  note: string;
}
export interface FigureSource {
  figure: string;
  source: string;
  note: string;
}
export interface SourceCheck {
  figure: string;
  source_a: string;
  value_a: number;
  source_b: string;
  value_b: number;
  difference: number | null;
  agree: boolean;
  note: string;
}
export interface Coverage {
  files: SourceFile[];
  figures: FigureSource[];
  checks: SourceCheck[];
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
  observation: boolean; // no edit of the graph states its change: shown apart, no gain, never ranked
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
  gain_low_ns: number; // the simulated gain's lowest and highest over the steps, -1 none
  gain_high_ns: number;
  edit: string; // the change as the graph replays it, in words; "" not simulated
}

/** One step's critical path in the digest (docs/critical_path.md). */
export interface StepPath {
  number: number;
  start_ns: number;
  dur_ns: number;
  by_category: Record<string, number>;
  segments: PathSegment[];
  segments_total: number;
}

/** A piece of a step's critical path: one event (or the gap before it) on one lane. */
export interface PathSegment {
  lane: string; // "thread 123 (pid 4)", "stream 7 (device 0)"
  name: string; // "" for a gap
  category: string;
  ts_ns: number; // relative to the window start in the routes' answers
  dur_ns: number;
}

/** A category's time on a step's critical path, and its share of the step (null: unknown step). */
export interface PathCategory {
  category: string;
  ns: number;
  share: number | null;
}

export interface CriticalPathStep {
  number: number;
  start_ns: number; // relative to the window start
  dur_ns: number;
  categories: PathCategory[]; // largest first; they sum to the step
  segments: PathSegment[]; // one page, in time order
  longest: PathSegment[]; // the step's 5 longest segments, longest first
  segments_kept: number; // segments the digest keeps (the longest, at most 64)
  segments_total: number; // pieces on the whole path
  next_offset: number | null;
}

/** GET /critical_path: each step's critical path (queries/critical_path.py). */
export interface CriticalPathResponse extends WindowHead {
  offset: number;
  limit: number;
  steps: CriticalPathStep[];
}

/** A stretch of the cross-rank path: a rank's own work, or a transfer, after a collective. */
export interface PathHop {
  rank: number;
  what: string; // "own work" | "transfer"
  after: string; // the collective it follows ("step start" for the first)
  ns: number;
  /** on the rank's own clock, relative to its window's start (where its events lie on its timeline) */
  start_ns: number;
  end_ns: number;
  /** a transfer: the rank that arrived last at the collective (the path goes on, earlier, on its rank) */
  waited_for?: number;
}

/** The clock offset subtracted from a rank's times to align it with the others (through the collectives). */
export interface ClockOffset {
  rank: number;
  offset_ns: number;
  aligned: boolean; // false: it shares no collective with another rank (its clock is taken as is)
  /** the rank's window at this position (absent where the route could not name it) */
  worker?: string;
  window?: string;
}

export interface CrossRankStep {
  step: number;
  dur_ns: number;
  held_by: number | null; // the rank holding most of the step
  by_rank: { rank: number; ns: number; share: number | null }[];
  hops: PathHop[];
  hops_total: number;
  next_offset: number | null;
}

/** GET /critical_path_ranks: which rank held each step across the ranks (analysis/graph/ranks.py). */
export interface CrossRankPathResponse {
  run: string;
  window_index: number;
  loading: boolean;
  offset: number;
  limit: number;
  ranks_total: number;
  problems: ClusterProblem[];
  steps: CrossRankStep[];
  clock_offsets: ClockOffset[];
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
  /** why the job asked for this window itself (ps.on_demand(trigger=...)); null when it did not */
  trigger?: string | null;
  /** how many memory snapshots (the allocator's pickles) the window has; the Memory view shows the first */
  snapshots?: number;
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
  // what to tell of a digest made by other analysis code, whose files are not here to make it again
  // (its first problem says the same); null for this viewer's own
  old_analysis: string | null;
  problems: Problem[];
}

/** /overview `figures`: the window's headline figures, computed in analysis (one function for
 * /overview and /cluster's per_rank rows). These interfaces mirror the msgspec Structs of
 * analysis/figures.py field for field (tests/frontend/test_frontend_types.py). */
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
/** Each step breakdown category's time over the step's (a step, or the average step); null unknown. */
export interface CategoryShares {
  compute: number | null;
  overlapped: number | null;
  communication: number | null;
  memcpy: number | null;
  memset: number | null;
  device_wait: number | null;
  runtime: number | null;
  dataloader: number | null;
  host: number | null;
  idle: number | null;
}
export interface StepShares {
  compute_share: number | null;
  compute_source: string; // "host" on windows without device work: the host operators are the computation
  comm_not_hidden_share: number | null;
  dataloader_share: number | null;
  idle_share: number | null; // nothing recorded (the breakdown's Idle)
  device_idle_share: number | null; // the step minus the device's busy time; null without device work
}
export interface WindowFigures extends StepShares {
  steps: number;
  total_step_ns: number;
  average_step_ns: number;
  average_shares: CategoryShares;
  memory: MemoryFigure[];
  slowest_op: SlowestOp | null;
  step_source: string; // "trace" | "step_marks" | "window" (no marks: ONE step) | CANN's file
  step_note: string; // step_source in words; "" for "trace"
}
/** A step of /overview: the digest's Step and its categories' shares of it. */
export interface OverviewStep extends Step {
  shares: CategoryShares;
  left_out: string; // why the average leaves it out: "window end" | "queued work" | ""
  note: string; // that reason in a sentence (analysis/step_note.py)
}

/** GET /overview */
export interface OverviewResponse extends WindowHead {
  schema_version: number;
  steps: OverviewStep[];
  average: Breakdown;
  rule_hits: RuleHit[];
  figures: WindowFigures;
  gpu_efficiency: GpuEfficiency[];
  npu_efficiency: NpuEfficiency[];
  coverage: Coverage; // the Overview's "Data" panel
  step_clock: string; // "host" | "device"
  /** the host side of data loading; null in a digest made by older code */
  input_pipeline: InputPipeline | null;
}

/** The host side of data loading (digest.proto InputPipeline, analysis/input_pipeline.py); -1 / "" unknown. */
export interface InputPipeline {
  loader: string; // "multiprocessing" | "single process" | "DataLoader" | "" (no DataLoader call in the trace)
  workers: number;
  worker_names: string[];
  steps: InputStep[];
  next_ns: number;
  step_ns: number;
  next_share: number | null;
  h2d_ns: number;
  h2d_bytes: number;
  pin_ns: number;
  next_calls: number;
}

export interface InputStep {
  step: number;
  step_ns: number;
  next_ns: number;
  next_calls: number;
  h2d_ns: number;
  h2d_calls: number;
  h2d_bytes: number;
  pin_ns: number;
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

/** GET /roofline: the roofline section and each step's MFU / HBM bandwidth (start relative). */
export interface RooflineResponse extends WindowHead {
  roofline: Roofline;
  steps: { number: number; start_ns: number; dur_ns: number; roofline: StepRoofline }[];
  /** the chips the chip selector offers: the peak table's rows for the window's kinds of device */
  chips?: string[];
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
  free_ns: number;
  preparing_ns: number; // CANN's Preparing, -1 from the trace
  other_ns: number; // the rest of the step: the parts add up to step_ns
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
  source: string; // where the split comes from: "trace" or CANN's file
  wait_source: string; // where wait / transfer come from ("" unknown)
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
  groups: string[]; // the labels of the communicators the bytes went through
}
/** One cell of the matrix in global ranks, per transport and communicator. */
export interface MatrixLink {
  src: number;
  dst: number;
  transport: string;
  group: string;
  group_label: string;
  bytes: number;
  time_ns: number;
  bandwidth_gbps: number | null;
}
/** A communicator of the run (analysis/communication/groups.py group_rows). */
export interface ClusterGroup {
  group: string;
  name: string;
  label: string;
  ranks: number[];
  ranks_source: string;
  members: number;
  calling_ranks: number[];
  missing: number[];
}
export interface RankCoverage {
  rank: number;
  sources: Record<string, string>;
  sampled: string[];
  disagree: string[];
}
export interface RankFigures {
  rank: number;
  worker: string;
  window: string;
  steps: number;
  step_ns: number;
  compute_share: number; // -1 unknown
  comm_not_hidden_share: number; // -1 unknown
  memory_device: string;
  memory_peak_bytes: number;
  memory_capacity_bytes: number;
  slowest_op: string;
  slowest_op_ns: number;
  slowest_op_metric: "device_self_ns" | "host_self_ns";
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
  slowest_op: RunSlowestOp | null;
}
export interface RunSlowestOp {
  name: string;
  ns: number;
  rank: number;
  metric: "device_self_ns" | "host_self_ns";
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
  matrix: MatrixLink[];
  matrix_cells: MatrixCell[];
  matrix_unmapped: { links: number; bytes: number; groups: string[] }; // links no file maps to global ranks
  groups: ClusterGroup[];
  world_size: number;
  world_size_source: string;
  coverage: RankCoverage[];
  matrix_truncated: boolean; // past 16,384 cells: the largest only (matrix_bins holds all)
  matrix_bins: MatrixBins;
  matrix_source: string;
  distributions: Distribution[];
  rank_heatmap: RankHeatmap;
  compute_source?: string; // "host" on CPU-only runs: the host operators are the computation
  breakdown_source: string; // "trace", or CANN's file when every rank has its step trace
  unmatched: { kind: string; group: string; calls: Record<string, number> }[];
  findings: RuleHit[]; // cross-rank findings (analysis/rules/cluster_rules.py), ranked by estimated gain
  critical_path: { step: number; dur_ns: number; by_rank: Record<string, number>; hops: PathHop[]; hops_total: number }[];
  clock_offsets: ClockOffset[];
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
  /** 95 % Welch interval of the step-time change (ns per step); null: too few steps */
  step_interval: Interval | null;
  significance: "significant" | "not significant" | "cannot judge";
  noise_text: string;
}
/** A 95 % interval of a change, ns per step (analysis/compare/noise.py). */
export interface Interval {
  low_ns: number;
  high_ns: number;
  df: number | null;
  level: number;
}
/** An operator the code's part of the change comes from (analysis/compare/attribution.py). */
export interface CodeItem {
  name: string;
  input_shapes: string;
  why: string;
  base_ns: number;
  target_ns: number;
  excess_ns: number;
}
/** The step-time change split into the machine's part and the code's (ns per step). */
export interface Attribution {
  matched_operators: number;
  matched_share: number | null;
  factor: number | null;
  factor_low: number | null;
  factor_high: number | null;
  step_delta_ns: number;
  machine_ns: number | null;
  code_ns: number;
  code_interval: Interval | null;
  code_items: CodeItem[];
  named_ns: number;
  rest_ns: number;
}
/** The regression gate's verdict (analysis/compare/gate.py); null where no threshold was asked. */
export interface Gate {
  status: "pass" | "regression" | "cannot judge";
  gate_on: "code" | "total";
  threshold_pct: number;
  part_ns: number | null;
  part_pct: number | null;
  interval: Interval | null;
  text: string;
}
/** Which baseline the answer compares with, and why (queries/pairing.py). */
export interface Pairing {
  rule: "named" | "triggered" | "previous window" | "previous run" | "next window" | "other worker" | "next run";
  text: string;
  /** false: the request named the baseline */
  default: boolean;
}
export interface CategoryDelta {
  category: string;
  base_ns: number;
  target_ns: number;
  delta_ns: number;
}
export type CompareStatus = "added" | "removed" | "changed" | "same";
export type CompareTable = "operators" | "kernels" | "families";
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
  /** "new" / "gone": the operator appears / disappears (no call on one side); delta_pct is null where one
   * side is under 1 % of the other */
  delta_text: "new" | "gone" | "";
  status: CompareStatus;
}
export interface Contributor {
  name: string;
  kind: "operator" | "category";
  delta_ns: number;
  status: CompareStatus;
}
/** One step category's change in the breakdown, with the operators that fall in it. */
export interface CategoryContribution {
  category: string;
  delta_ns: number;
  operators: Contributor[];
  rest_ns: number;
}
export interface Contributors {
  step_delta_ns: number;
  operators: Contributor[];
  explained_ns: number;
  unexplained_ns: number;
  /** the breakdown's deltas (they sum to step_delta_ns), largest first */
  by_category: CategoryContribution[];
}
export interface TreeNode {
  name: string;
  kind: "root" | "frame" | "op" | "more";
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
  /** rows of each table (operators, kernels, kernel families) */
  tables: Record<CompareTable, number>;
  /** the page of one table: searched, sorted and cut by the server */
  table: CompareTable;
  all_rows: number;
  total: number;
  offset: number;
  limit: number;
  sort: string;
  order: "asc" | "desc" | null;
  search: string;
  rows: CompareRow[];
  contributors: Contributors;
  tree: TreeNode;
  memory: MemoryPair[];
  communication: CollectiveDelta[];
  communication_by_kind: CollectiveDelta[];
  attribution: Attribution;
  gate: Gate | null;
  pairing: Pairing;
}

// -- the allocator's memory snapshot (/memory_snapshot*, docs/http_api.md; queries/memory_snapshot.py) --------

export interface SnapshotState {
  segments: number;
  expandable_segments: number;
  reserved: number;
  allocated: number;
  requested: number;
  active: number;
  free: number;
  /** 1 - requested / reserved; -1 unknown */
  fragmentation: number;
  largest_free_block: number;
  free_blocks: number;
  blocks: number;
}
export interface SnapshotEntryState {
  entry: number;
  time_us: number;
  segments: number;
  reserved: number;
  requested: number;
  fragmentation: number;
  /** the trace gives requested sizes, not rounded blocks: an upper bound */
  largest_free_block_at_most: number;
  free_ranges: number;
  blocks: number;
}
export interface SnapshotGroup {
  bytes: number;
  blocks: number;
  frame: string;
  stack_id?: number;
  stack?: string[];
}
export interface SnapshotBlock {
  entry: number;
  addr: number;
  bytes: number;
  time_us: number;
  frame: string;
  stack: string[];
  /** the host operator running when it was allocated (only when joined by time) */
  operator?: string;
}
export interface SnapshotPeak {
  entry: number;
  time_us?: number;
  requested: number;
  reserved: number;
  traced_blocks?: number;
  before_history: number;
  by_frame: SnapshotGroup[];
  by_frame_groups?: number;
  by_stack: SnapshotGroup[];
  by_stack_groups?: number;
  top_blocks: SnapshotBlock[];
}
export interface SnapshotRelease {
  entry: number;
  time_us: number;
  kind: "empty_cache" | "oom_retry" | "allocator";
  segments: number;
  bytes: number;
  reserved_before: number;
  reserved_after: number;
  frame: string;
  stack: string[];
}
export interface SnapshotEmptyCache {
  empty_cache_calls: number;
  empty_cache_bytes: number;
  releases: SnapshotRelease[];
  release_count: number;
  warning: string;
}
export interface SnapshotOom {
  entry: number;
  time_us: number;
  requested: number;
  device_free: number;
  allocated: number;
  reserved: number;
  frame: string;
  stack: string[];
}
export interface SnapshotGrowth {
  step: number;
  first_entry: number;
  last_entry: number;
  live_start: number;
  live_end: number;
  grown: number;
  grown_blocks: number;
  by_frame: { frame: string; bytes: number }[];
}
export interface SnapshotLeak {
  stack_id: number;
  frame: string;
  stack: string[];
  bytes_per_step: number[];
  bytes: number;
  steps: number[];
}
export interface SnapshotFinding {
  rule: string;
  severity: string;
  title: string;
  detail: string;
  why: string;
  change_torch: string;
  change_npu: string;
  /** what it would save, in bytes (0: none in bytes) */
  gain_bytes: number;
  gain: string;
  figure: string;
  figure_value: number;
  threshold: number;
  stack: string[];
}
export interface SnapshotDevice {
  device: number;
  entries: number;
  actions: Record<string, number>;
  at_snapshot: SnapshotState;
  at_peak: SnapshotEntryState | null;
  before_history: { requested: number; reserved: number };
  peak: SnapshotPeak;
  empty_cache: SnapshotEmptyCache;
  ooms: SnapshotOom[];
  steps_source: string;
  /** the first `limit` steps */
  growth: SnapshotGrowth[];
  /** the last step's growth (null without steps) */
  growth_last: SnapshotGrowth | null;
  steps: number;
  leaks: SnapshotLeak[];
  joined: boolean;
  join: string;
  transient_at_peak: { step: number | null; bytes: number; by_frame: { frame: string; bytes: number }[] } | null;
  findings: SnapshotFinding[];
}
export interface SnapshotResponse {
  schema: number;
  file: string;
  flavour: string;
  has_times: boolean;
  segments: number;
  blocks: number;
  entries: number;
  frames: number;
  devices: SnapshotDevice[];
  warnings: string[];
  run: string;
  worker: string;
  window: string;
  index: number;
  snapshots: string[];
}
export interface SnapshotRankRow {
  worker: string;
  rank: number;
  window: string;
  file: string;
  error?: string;
  device?: number;
  peak_requested: number;
  peak_reserved?: number;
  reserved?: number;
  fragmentation?: number;
  largest_free_block?: number;
  steps?: number;
  last_step_grown?: number;
  leaks?: number;
  empty_cache_calls?: number;
}
export interface SnapshotRanksResponse {
  run: string;
  window_index: number;
  ranks: SnapshotRankRow[];
  findings: SnapshotFinding[];
}
export interface SnapshotBandsResponse {
  run: string;
  worker: string;
  window: string;
  device: number;
  start_entry: number;
  end_entry: number;
  entries: number;
  alive: number;
  shown: number;
  alive_bytes: number;
  shown_bytes: number;
  lanes: number;
  frames: string[];
  alloc: number[];
  /** the entry of its free; `entries` when never freed in the history */
  free: number[];
  bytes: number[];
  frame: number[];
  lane: number[];
}
export interface SnapshotSeriesResponse {
  run: string;
  worker: string;
  window: string;
  device: number;
  entry: number[];
  requested: number[];
  reserved: number[];
  time_us: number[];
}

// -- fetching ------------------------------------------------------------------------------------------

/** The window a per-window route is asked about. */
export interface Selection {
  run: string;
  worker: string;
  window: string;
  /** the chip chosen in the UI (views/chip_select.ts): the peaks of MFU, % of peak, the roofline; "" = the files' */
  chip?: string;
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
  const params: Record<string, string> = { run: sel.run, worker: sel.worker, window: sel.window };
  if (sel.chip) params.chip = sel.chip; // routes without peaks ignore it
  return params;
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
  /** where the steps come from (the digest's step_source): "trace", "step_marks", a CANN file, or
   * "window" (none marked: the window is one step); "" while unknown */
  step_source?: string;
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
  /** ids of the tracks that hold a match */
  match_tracks: number[];
  /** with from_ns / to_ns: how many matches overlap that range, and the first of them by start
   * (at most 500), each [event, track, depth, start_ns, dur_ns] */
  in_range?: number;
  hits?: [number, number, number, number, number][];
}

export interface TimelineSummaryRow {
  name: string;
  /** time its events spend inside the range, clipped to it */
  total_ns: number;
  count: number;
  /** that time less its children's on the same track (-1 unknown) */
  self_ns: number;
  /** total_ns over the range's length (above 1 where calls overlap on several tracks) */
  share: number;
}

export interface TimelineSummaryResponse {
  start_ns: number;
  end_ns: number;
  events: number;
  names: number;
  rows: TimelineSummaryRow[];
  /** the share of the range on the window's critical path, where its digest has one (else null) */
  critical_path_share: number | null;
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

// -- capture (/capture, /capture_state, /capture_request; docs/http_api.md, "Capture") ----------------

export interface CaptureRankStatus {
  rank: number;
  host: string;
  pid: number;
  step: number;
  state: string;
  live: boolean;
}

export interface CaptureJob {
  live_ranks: number[];
  world_size: number;
  /** null for torch_npu's dynamic_profile, which writes no heartbeat */
  step: number | null;
  steps_per_s: number | null;
  backend: string | null;
  max_steps: number;
  last_heartbeat_s: number | null;
  ranks: CaptureRankStatus[];
}

/** "on_demand": the job uses ps.on_demand(); "torch_npu_dynamic_profile": torch_npu's dp.init(folder). */
export type CaptureKind = "on_demand" | "torch_npu_dynamic_profile";

export interface CaptureTarget {
  run: string;
  kind: CaptureKind;
  job: CaptureJob;
  problems: string[];
}

export interface CaptureList {
  enabled: boolean;
  runs: CaptureTarget[];
  limits: { max_steps: number; activities: string[]; options: string[] };
}

export interface CaptureRankState {
  rank: number;
  state: string;
  message: string;
  windows: string[];
  step: number | null;
}

/** Where a request stands: "waiting" | "scheduled" | "recording" | "written" | "partial" | "refused" | "failed" | "missed" | "gone". */
export interface CaptureState {
  id: string;
  by: string;
  created_ns: number;
  state: string;
  message: string;
  start_step: number;
  end_step: number;
  steps: number;
  ranks: CaptureRankState[];
  written_by: number[];
}

export interface CaptureRunState {
  run: string;
  kind: CaptureKind;
  job: CaptureJob;
  request: CaptureState | null;
  problems: string[];
}

export interface CaptureAsked {
  run: string;
  request: CaptureState;
}

/** POST a capture request: the one route that writes (JSON body and the X-Canning-Capture header). */
export async function postCapture(body: Record<string, unknown>): Promise<CaptureAsked> {
  let resp: Response;
  try {
    resp = await fetch("./capture_request", {
      method: "POST",
      headers: { Accept: "application/json", "Content-Type": "application/json", "X-Canning-Capture": "1" },
      body: JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(`Cannot reach TensorBoard (${(err as Error).message}). Is it still running?`, 0);
  }
  const answer: unknown = await resp.json().catch(() => null);
  if (!resp.ok) throw new ApiError(errorOf(answer, resp.status), resp.status);
  return answer as CaptureAsked;
}

/** GET /trends: the key figures of every window of one worker (analysis/trends.py), for the Overview's
 * trends chart; HTTP 202 {loading, done, total} while its windows are being digested. */
export interface TrendPoint {
  window: string;
  label: string;
  step: number;
  values: Record<string, number>;
  old_analysis: boolean;
}
export interface TrendsResponse {
  run: string;
  worker: string;
  loading: boolean;
  windows: TrendPoint[];
  problems: { window: string; message: string }[];
}
export interface TrendsLoading {
  loading: true;
  done: number;
  total: number;
}
