"""Every threshold of the rules, in one place (docs/rules.md lists them with their sources).

Where a peer has a threshold we take it: torch-tb-profiler (tb): dataloader > 5 %, communication
> 10 %, GPU utilisation < 50 %, peak memory > 90 % of capacity, Tensor Cores from compute
capability 7.0; msprof-analyze advisor (ma): AI_CPU task >= 20 us, slow rank / link (max - min) /
mean > 5 %, >= 20 op compilations, small packets (> 20 % of the volume in packets < 16 MB SDMA /
1 MB RDMA), SDMA data not a multiple of 512 B, memory calls > 10 ms, fusable sequences repeated
>= 5 times. The others are ours, chosen as stated beside each.
"""
from __future__ import annotations

# -- significance (every rule: docs/rules.md "Significance") -------------------------------------
MIN_GAIN_SHARE = 0.05  # ours (ma's 5 % slow-rank ratio, tb's 5 % DataLoader): a gain under 5 % of the step is not reported
NOISE_MIN_STEPS = 2  # the noise floor needs at least two steps of a rank (one step shows no variation)
# the noise floor: the one-sided 90 % bound of Student's t on the mean over n steps, t(0.90, n - 1) x the
# standard error (statistics tables); a gain under it could be the rank's own step-to-step variation
T90 = {1: 3.078, 2: 1.886, 3: 1.638, 4: 1.533, 5: 1.476, 6: 1.440, 7: 1.415, 8: 1.397, 9: 1.383, 10: 1.372,
       15: 1.341, 20: 1.325, 30: 1.310}
T90_LARGE = 1.282  # more than 30 degrees of freedom: the normal bound
MAD_TO_SD = 1.4826  # the median absolute deviation x this = the sd of a normal distribution (robust scale)
SHARED_MIN_SHARE = 0.01  # two findings that claim more than 1 % of the step in common say so
# -- time ----------------------------------------------------------------------------------------
DATALOADER_SHARE = 0.05  # tb: DataLoader / step, above
PYTHON_PATH_SHARE = 0.10  # ours: untraced Python on the steps' critical path / step, above
DEVICE_IDLE_SHARE = 0.50  # tb: GPU utilisation < 50 %: the device has no work, above
HOST_SHARE = 0.50  # ours: (Host + Runtime) / step above this while the device is idle: host-bound
RUNTIME_SHARE = 0.10  # ours: Runtime (launch calls, device idle) / step, above: launch-bound
DEVICE_WAIT_SHARE = 0.10  # ours: Device wait (host blocked until the device is done) / step, above
SYNC_CALLS_PER_STEP = 1.0  # ours: host-device synchronising calls (.item(), .cpu(), ...) per step, at least
DOMINANT_SHARE = 0.30  # ours: one operator / kernel family above 30 % of device (or host) self time
# ours: an operator at 80 % of its roof (analysis/efficiency) has at most a fifth of its time to gain: it
# is not called dominant, and a dominant one's gain is bounded by what its roof leaves
NEAR_ROOF = 0.80
TINY_KERNEL_NS = 10_000  # ours: mean kernel under 10 us ...
TINY_KERNEL_MIN_CALLS = 1000  # ... over at least this many kernels
FUSION_MIN_REPEATS = 5  # ma: a fusable sequence counts from 5 occurrences in the window
AI_CPU_NS = 20_000  # ma: the longest AI_CPU task at least 20 us
OP_COMPILE_CALLS = 20  # ma: MAX_OP_COMPILE_NUM, op compilations (aclopCompile*) at least
COMPILE_SHARE = 0.05  # ours: graph compilation (dynamo / inductor / aclop) / window, above
# -- compute efficiency --------------------------------------------------------------------------
TC_ELIGIBLE_SHARE = 0.10  # tb: kernel time under TC-eligible ops with no TC kernel, above
TENSOR_CORE_CC = 7.0  # tb: Tensor Cores from compute capability 7.0 (Volta)
TF32_CC = 8.0  # TF32 exists from compute capability 8.0 (Ampere) on
LOW_PRECISION_SHARE = 0.5  # ours: a family whose kernels run below fp32 for over half their time gets no autocast advice
BF16_CC = 8.0  # bfloat16 Tensor Core math from 8.0 on
MATMUL_SHARE = 0.10  # ours: matmul / conv ops above 10 % of self time are worth judging
ALIGN_ELEMENTS = 8  # ours (NVIDIA's guidance for fp16): Tensor Core dims a multiple of 8 (16 B of fp16)
CUBE_ALIGN_ELEMENTS = 16  # ma (cube affinity): cube units work on 16 x 16 fractals
UNALIGNED_CALL_SHARE = 0.20  # ours: above 20 % of the matmul / conv calls with an unaligned dim
# -- communication -------------------------------------------------------------------------------
COMM_NOT_HIDDEN_SHARE = 0.10  # tb: communication not hidden by compute / step, above
P2P_WAIT_SHARE = 0.5  # ours: above half of the communication wait in send / recv: pipeline, not overlap
SLOW_RANK_RATIO = 0.05  # ma: (max - min) / mean over ranks, above (analysis/cluster.py uses the same)
SMALL_PACKET_SHARE = 0.20  # ma: above 20 % of the volume in small packets
SMALL_PACKET_SDMA_BYTES = 16 * 2 ** 20  # ma: SDMA packet < 16 MB is small
SMALL_PACKET_RDMA_BYTES = 2 ** 20  # ma: RDMA packet < 1 MB is small
BYTE_ALIGNMENT = 512  # ma: SDMA data sizes a multiple of 512 B
BYTE_ALIGNMENT_MIN_BYTES = 1 << 20  # ours: smaller calls are latency-bound; their unaligned tail is noise
LOW_BANDWIDTH_SHARE = 0.30  # ours: bandwidth under 30 % of the link's nominal capacity, on large transfers
LOW_BANDWIDTH_MIN_BYTES = 16 * 2 ** 20  # ours: judge bandwidth only on calls of at least 16 MB
# nominal one-direction link capacity, GB/s (vendor data sheets); used only as the "far below" yardstick
LINK_CAPACITY_GBPS = {"HCCS": 56.0, "PCIE": 32.0, "RDMA": 25.0, "NVLINK": 300.0, "SDMA": 18.0}
# -- memory --------------------------------------------------------------------------------------
PEAK_MEMORY_SHARE = 0.90  # tb: max(peak allocated, peak reserved) / capacity, above
FRAGMENTATION_RATIO = 1.5  # ours: peak reserved above 1.5 x peak allocated ...
FRAGMENTATION_MIN_BYTES = 256 * 2 ** 20  # ... and at least 256 MiB more
MEMORY_CALLS_NS = 10_000_000  # ma: aclrtMalloc / aclrtFree / cudaMalloc / cudaFree host time in the window, above
# -- profiling itself ----------------------------------------------------------------------------
STACK_EVENTS_SHARE = 0.25  # ours: python_function events above a quarter of all events (with_stack)
VIEWER_EVENTS = 1_000_000  # catapult crashes around 1 M events (google/trace-viewer#298)
# -- schedule (msprof-analyze advisor's "schedule" checks, and torch-tb-profiler's backend check) --
SYNC_BATCHNORM_CALLS = 20  # ma: SyncBatchNorm operators in the window, at least
GC_NS = 1_000_000  # ma: a garbage-collection pause above 1 ms (torch_npu records them with gc_detect_threshold)
