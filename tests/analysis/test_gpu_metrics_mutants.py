"""The GPU efficiency figures (analysis/gpu_metrics.py) and the Tensor Core tests of a window and a kernel name
(analysis/tensor_cores.py) on tables written here by hand (issue 46, docs/mutants.md "What was run on npu_metrics,
gpu_metrics ..."). Each expected value is worked out in the docstring or a comment from the rows (times in ns).
"""
import math

import numpy as np
from _synthetic import ev, table

from canning_tb.analysis import gpu_metrics as gm
from canning_tb.analysis import tensor_cores as tcs
from canning_tb.analysis.context import Context
from canning_tb.ingest.table import Kind as K

nan = math.nan
A100 = [{"kind": "cuda", "index": 0, "name": "NVIDIA A100"}, {"kind": "cuda", "index": 1}]


def _gpu(events, devices=A100, fmt="kineto", metrics=None):
    return table(events, devices=devices, fmt=fmt, metrics=metrics)  # metrics in time order: every test's ts differ


def _window():
    """Kernels in time order (device 0 unless said):
      elementwise [0,10) device 1; volta_h884gemm [10,50) blocks/SM 0.5 occ 40; elementwise [30,70) blocks/SM 2
      occ -; ncclKernel (communication) [90,210) occ 10; a memcpy [95,300) (no kernel); relu [400,500) blocks/SM 1
      occ 90; a kernel of no device (-1) [450,460)."""
    return _gpu([ev("elementwise", K.KERNEL, 0, 10, device=1), ev("volta_h884gemm_64x64", K.KERNEL, 10, 40),
                 ev("elementwise", K.KERNEL, 30, 40), ev("ncclKernel_AllReduce", K.COMM_KERNEL, 90, 120),
                 ev("Memcpy HtoD", K.MEMCPY, 95, 205), ev("relu", K.KERNEL, 400, 100),
                 ev("elementwise", K.KERNEL, 450, 10, device=-1)],
                metrics={"blocks_per_sm": [nan, 0.5, 2, nan, nan, 1, nan],
                         "occupancy_pct": [nan, 40, nan, 10, nan, 90, nan]})


def test_gpu_figures_by_hand():
    """Span: [200,300), [0,60), [50,100) merge to [0,100) + [200,300) = 200 ns.
    Device 0: inside the span gemm 40, elementwise 40, nccl 10 + 10 = 20, relu 0 (memcpy: no kernel).
      busy = [10,70) 60 + [90,100) 10 + [200,210) 10 = 80: utilisation 0.4;
      SM efficiency: [10,30) 0.5, [30,50) min(2.5, 1), [50,70) min(2, 1), relu outside the span:
        (20 x 0.5 + 20 + 20) / 200 = 0.25;
      occupancy by time inside: (40 x 40 + 10 x 20) / 60 = 30 (relu: 0 ns inside; elementwise: none);
      Tensor Cores: gemm 40 of 100 = 0.4; 4 kernels, 3 with blocks/SM, 3 with occupancy.
    Device 1: [0,10) = 10 / 200; no blocks / occupancy value: unknown; share 0 of 10 = 0."""
    got = gm.gpu_efficiency(_window(), [200, 0, 50], [300, 60, 100])
    assert [(g.device, g.name, g.span_ns, g.busy_ns, g.kernels, g.kernels_with_blocks_per_sm,
             g.kernels_with_occupancy) for g in got] == \
        [(0, "NVIDIA A100", 200, 80, 4, 3, 3), (1, "GPU 1", 200, 10, 1, 0, 0)]
    assert (got[0].utilization, got[0].sm_efficiency, got[0].achieved_occupancy_pct, got[0].tensor_core_share) == \
        (0.4, 0.25, 30.0, 0.4)
    assert (got[1].utilization, got[1].sm_efficiency, got[1].achieved_occupancy_pct, got[1].tensor_core_share) == \
        (0.05, -1.0, -1.0, 0.0)


def test_no_span_leaves_the_figures_unknown_but_counts_the_kernels():
    (g, _) = gm.gpu_efficiency(_window(), [], [])
    assert (g.span_ns, g.busy_ns, g.kernels, g.kernels_with_blocks_per_sm, g.kernels_with_occupancy) == (0, 0, 4, 3, 3)
    assert (g.utilization, g.sm_efficiency, g.achieved_occupancy_pct, g.tensor_core_share) == (-1.0,) * 4


def test_without_measurement_columns_the_estimates_are_unknown():
    """No blocks / occupancy column at all: counts 0, both estimates -1; [0,5) of [0,10): 0.5."""
    (g,) = gm.gpu_efficiency(_gpu([ev("k", K.KERNEL, 0, 5)]), [0], [10])
    assert (g.kernels_with_blocks_per_sm, g.kernels_with_occupancy, g.sm_efficiency, g.achieved_occupancy_pct,
            g.utilization) == (0, 0, -1.0, -1.0, 0.5)


def test_sm_efficiency_where_kernels_meet_and_negative_values():
    """[0,10) and [10,20) 1 block/SM each: at 10 one ends as the other starts, level 1 throughout: 20 ns.
    A kernel [0,20) of -1 blocks/SM and an empty one [5,5) of 5 are left out. Span [0,20)."""
    span = (np.array([0]), np.array([20]))
    got = gm.sm_efficiency_integral(np.array([0, 10, 0, 5]), np.array([10, 20, 20, 5]),
                                    np.array([1.0, 1.0, -1.0, 5.0]), span)
    assert got == 20.0
    assert gm.sm_efficiency_integral(np.array([0]), np.array([10]), np.array([0.0]), span) == 0.0
    # 0.25 blocks/SM over [0,8) and [4,12) in span [0,20): 4 x 0.25 + 4 x 0.5 + 4 x 0.25 = 4
    assert gm.sm_efficiency_integral(np.array([0, 4]), np.array([8, 12]), np.array([0.25, 0.25]), span) == 4.0


def test_which_windows_are_gpu_and_cuda_windows():
    """Tensor Core share only on CUDA: ROCm, or a trace that names no device, gives -1. Ascend / NPU windows have
    no GPU figures; a window of only CPU devices is a Kineto trace's GPU window."""
    k = [ev("volta_h884gemm", K.KERNEL, 0, 10)]
    share = {kind: [g.tensor_core_share for g in gm.gpu_efficiency(_gpu(k, devices=devs), [0], [10])]
             for kind, devs in (("cuda", [{"kind": "CUDA", "index": 0}]), ("gpu", [{"kind": "gpu", "index": 0}]),
                                ("rocm", [{"kind": "rocm", "index": 0}]), ("none", []),
                                ("cpu", [{"kind": "cpu", "index": 0}]), ("npu", [{"kind": "npu", "index": 0}]),
                                ("no kind", [{"index": 0}]), ("mixed", [{"kind": "cuda", "index": 0},
                                                                       {"kind": "rocm", "index": 1}]))}
    assert share == {"cuda": [1.0], "gpu": [1.0], "rocm": [-1.0], "none": [-1.0], "cpu": [-1.0], "npu": [],
                     "no kind": [], "mixed": [-1.0]}
    assert gm.gpu_efficiency(_gpu(k, fmt="ascend"), [0], [10]) == []
    assert not tcs.is_cuda_window(_gpu(k, devices=[{"kind": "cuda", "index": 0}], fmt="ascend"))


def test_a_device_entry_with_index_none_is_device_0():
    t = _gpu([ev("k", K.KERNEL, 0, 5)], devices=[{"kind": "cuda", "index": None, "name": "H100"}])
    assert gm.gpu_efficiency(t, [0], [10])[0].name == "H100"
    t = _gpu([ev("k", K.KERNEL, 0, 5)], devices=[{"kind": "cuda", "name": "H100"}, {"kind": "cuda", "index": 0}])
    assert gm.gpu_efficiency(t, [0], [10])[0].name == "GPU 0"  # no index is no device 0


def test_tensor_core_kernel_names():
    """Substrings, case-sensitive, of real kernel names (Volta HMMA, cuBLASLt nvjet, CUTLASS sm90, FlashAttention 2,
    Triton templates); plain kernels are not."""
    yes = ["volta_h884gemm_64x64_ldg8_nn", "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
           "cutlass3x_sm90_gemm_bf16_MainloopSm90TmaGmmaWarpSpecialized", "flash_fwd_kernel", "triton_tem_fused_mm_0",
           "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32", "fmha_cutlassF_f16_aligned_64x64_rf_sm80"]
    no = ["void at::native::vectorized_elementwise_kernel<4>", "ampere_sgemm_128x64_nn", "XMMA",
          "triton_poi_fused_add_0"]
    assert [tcs.uses_tensor_cores(n) for n in yes] == [True] * len(yes)
    assert [tcs.uses_tensor_cores(n) for n in no] == [False] * len(no)


GEMM = "volta_h884gemm_64x64_ldg8_nn"  # a Tensor Core kernel (h884: Volta's HMMA)


def _shares(events, groups):
    """op_tc_shares over the host calls whose names are in `groups` ({name: group}); the rest ungrouped."""
    t = table(events, devices=[{"kind": "cuda", "index": 0}])
    ctx = Context(t)
    names = [t.strings[int(t.events["name"][r])] for r in ctx.host.rows]
    pos = np.array([i for i, n in enumerate(names) if n in groups], np.int64)
    inv = np.array([groups[names[i]] for i in pos], np.int64)
    self_share, total_share = tcs.op_tc_shares(ctx, pos, inv, len(set(groups.values())))
    return self_share.tolist(), total_share.tolist()


def test_op_tc_shares_with_nested_calls_of_one_group():
    """Host: linear [0,1000) > mm M1 [100,400) > aten::t [120,320) > mm M2 [150,300); aten::add [2000,2100);
    aten::relu [3000,3100) launching nothing; aten::copy_ [4000,4100) not grouped (the last host call).
    Launched: GEMM 100 by M2, elementwise 20 by M1, GEMM 50 by linear, a memcpy 900 by linear (no kernel),
    GEMM 1 ns by add, copy kernel 10 by copy_, an nccl kernel launched by no operator.
    Groups linear 0, mm 1, add 2, relu 3.
      self: linear 50 / 50 = 1; mm (20 + 100) of which 100: 100 / 120; add 1 / 1; relu none: -1.
      total: linear 150 / 170 (its subtree); mm over its outermost call M1 only (M2 is inside it, through aten::t):
      100 / 120; add 1 / 1; relu -1."""
    got = _shares([
        ev("aten::linear", K.CPU_OP, 0, 1000, external_id=1), ev("aten::mm", K.CPU_OP, 100, 300, external_id=2),
        ev("aten::t", K.CPU_OP, 120, 200, external_id=3), ev("aten::mm", K.CPU_OP, 150, 150, external_id=4),
        ev("aten::add", K.CPU_OP, 2000, 100, external_id=5), ev("aten::relu", K.CPU_OP, 3000, 100, external_id=6),
        ev("aten::copy_", K.CPU_OP, 4000, 100, external_id=7),
        ev(GEMM, K.KERNEL, 160, 100, external_id=4), ev("elementwise", K.KERNEL, 310, 20, external_id=2),
        ev(GEMM, K.KERNEL, 500, 50, external_id=1), ev("Memcpy DtoD", K.MEMCPY, 560, 900, external_id=1),
        ev(GEMM, K.KERNEL, 2010, 1, external_id=5), ev("copy_kernel", K.KERNEL, 4010, 10, external_id=7),
        ev("ncclKernel_AllReduce", K.COMM_KERNEL, 5000, 100)],
        {"aten::linear": 0, "aten::mm": 1, "aten::add": 2, "aten::relu": 3})
    assert got == ([1.0, 100 / 120, 1.0, -1.0], [150 / 170, 100 / 120, 1.0, -1.0])


def test_op_tc_shares_the_deepest_call_alone():
    """mm M1 [0,100) > aten::t [10,90) > mm M2 [20,80): GEMM 30 by M2, elementwise 10 by M1. M2, the only call two
    levels deep, is inside M1: mm's total is M1's subtree once, 30 / (30 + 10) = 0.75 (M2 counted again:
    60 / 70); self (10 + 30) of which 30 = 0.75. aten::view [200,210), the last host call, launches nothing: -1."""
    got = _shares([
        ev("aten::mm", K.CPU_OP, 0, 100, external_id=1), ev("aten::t", K.CPU_OP, 10, 80, external_id=2),
        ev("aten::mm", K.CPU_OP, 20, 60, external_id=3), ev("aten::view", K.CPU_OP, 200, 10, external_id=4),
        ev(GEMM, K.KERNEL, 25, 30, external_id=3), ev("elementwise", K.KERNEL, 60, 10, external_id=1)],
        {"aten::mm": 0, "aten::view": 1})
    assert got == ([0.75, -1.0], [0.75, -1.0])


def test_op_tc_shares_of_one_call_and_off_cuda():
    """One host call launching a 10 ns GEMM: 1 and 1. The same on ROCm: -1 and -1."""
    rows = [ev("aten::mm", K.CPU_OP, 0, 100, external_id=1), ev(GEMM, K.KERNEL, 10, 10, external_id=1)]
    assert _shares(rows, {"aten::mm": 0}) == ([1.0], [1.0])
    t = table(rows, devices=[{"kind": "rocm", "index": 0}])
    assert [a.tolist() for a in tcs.op_tc_shares(Context(t), np.array([0]), np.array([0]), 1)] == [[-1.0], [-1.0]]


def test_a_span_and_kernel_of_one_nanosecond():
    """Span [0,1), a GEMM [0,1) at 50 % occupancy: utilisation 1, occupancy 50 (weight 1 ns), Tensor Cores 1 / 1."""
    (g,) = gm.gpu_efficiency(_gpu([ev(GEMM, K.KERNEL, 0, 1)], metrics={"occupancy_pct": [50]}), [0], [1])
    assert (g.span_ns, g.busy_ns, g.utilization, g.achieved_occupancy_pct, g.tensor_core_share) == \
        (1, 1, 1.0, 50.0, 1.0)


def test_kernels_outside_the_span_leave_occupancy_and_tensor_cores_unknown():
    """Span [0,100), a GEMM [200,300) with occupancy 50: 0 ns inside, so occupancy and share are -1; utilisation 0."""
    (g,) = gm.gpu_efficiency(_gpu([ev(GEMM, K.KERNEL, 200, 100)], metrics={"occupancy_pct": [50]}), [0], [100])
    assert (g.utilization, g.kernels_with_occupancy, g.achieved_occupancy_pct, g.tensor_core_share) == \
        (0.0, 1, -1.0, -1.0)


def test_an_occupancy_of_zero_weighs_in():
    """[0,10) at 0 % and [10,20) at 0.5 %: (0 x 10 + 0.5 x 10) / 20 = 0.25."""
    t = _gpu([ev("a", K.KERNEL, 0, 10), ev("b", K.KERNEL, 10, 10)], metrics={"occupancy_pct": [0, 0.5]})
    assert gm.gpu_efficiency(t, [0], [20])[0].achieved_occupancy_pct == 0.25


def test_a_named_entry_without_index_names_no_gpu():
    """An entry with a name but no index, and GPU 1 without a name: GPU 1 is "GPU 1"."""
    t = _gpu([ev("k", K.KERNEL, 0, 5, device=1)],
             devices=[{"kind": "cuda", "name": "H100"}, {"kind": "cuda", "index": 1}])
    assert [(g.device, g.name) for g in gm.gpu_efficiency(t, [0], [10])] == [(1, "GPU 1")]
