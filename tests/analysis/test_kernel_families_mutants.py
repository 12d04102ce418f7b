"""The family of each kernel (analysis/kernel_families.py) on tables written here by hand (issue 46, docs/mutants.md
"What was run on npu_metrics, gpu_metrics ... kernel_families"): the launching operator or the nearest one around it
with a family, the profiler's category, then the name's tokens; the family of a group by most of its time. Each
expected family is read from the rules of the module's doc and names.VENDOR_TOKENS, by hand, in the comments.
"""
import numpy as np
from _synthetic import ev, table

from canning_tb.analysis import kernel_families as kf
from canning_tb.analysis.context import Context
from canning_tb.ingest.table import Kind as K


def _families(events):
    """{kernel name: family} of the KERNEL / COMM_KERNEL rows (each name once in these tables)."""
    t = table(events, devices=[{"kind": "cuda", "index": 0}])
    ctx = Context(t)
    kinds = t.events["kind"][ctx.device_rows]
    dpos = np.flatnonzero((kinds == int(K.KERNEL)) | (kinds == int(K.COMM_KERNEL)))
    rows = ctx.device_rows[dpos]
    code, labels = kf.kernel_families(ctx, rows, dpos)
    return {t.strings[int(t.events["name"][r])]: labels[c] for r, c in zip(rows.tolist(), code.tolist())}


def test_families_by_launcher_category_and_name():
    """Host: Optimizer.step#AdamW.step [0,1000) > aten::mm [100,200), aten::add_ [300,400) > cudaLaunchKernel
    [310,320) (a runtime call: names no family) and > aten::mul_ [340,380); aten::conv2d [2000,3000) >
    aten::contiguous [2100,2200); aten::relu [4000,4100); c10d::allreduce_ [5000,5100);
    npu::npu_fusion_attention [6000,6100).
    Kernels (launcher -> family):
      sm80_xmma_gemm by mm: matmul (the innermost launcher with a family, not the optimizer step);
      transpose_kernel by mm: copy / layout (a layout kernel of a compute launcher stays one);
      multi_tensor_apply_kernel and copy_kernel by add_: optimizer (the step around it; a layout kernel of the
        optimizer is the optimizer's); mul_kernel_9 by mul_, two levels under the step: optimizer; ncclKernel_ZeRO
        (a COMM_KERNEL) by the step itself: optimizer (the launcher before the category);
      implicit_convolve_sgemm by conv2d: convolution; transpose_readWrite by contiguous: copy / layout (the
        convolution around it, a layout name);
      vectorized_elementwise_kernel by relu: no launcher family, by name: elementwise;
      ncclKernel_x (a KERNEL, not a COMM_KERNEL) by c10d::allreduce_: communication (launcher);
      fused_kernel_a by npu_fusion_attention: attention;
      hcom_broadcast_ (COMM_KERNEL) by relu: communication (category); ncclDevKernel_AllReduce (COMM_KERNEL) of no
        launcher: communication; softmax_warp_forward of no launcher: softmax (name); foo_bar_kernel: other."""
    got = _families([
        ev("Optimizer.step#AdamW.step", K.USER_ANNOTATION, 0, 1000, external_id=1),
        ev("aten::mm", K.CPU_OP, 100, 100, external_id=2), ev("aten::add_", K.CPU_OP, 300, 100, external_id=3),
        ev("cudaLaunchKernel", K.RUNTIME, 310, 10), ev("aten::mul_", K.CPU_OP, 340, 40, external_id=9),
        ev("aten::conv2d", K.CPU_OP, 2000, 1000, external_id=4),
        ev("aten::contiguous", K.CPU_OP, 2100, 100, external_id=5),
        ev("aten::relu", K.CPU_OP, 4000, 100, external_id=6),
        ev("c10d::allreduce_", K.CPU_OP, 5000, 100, external_id=7),
        ev("npu::npu_fusion_attention", K.CPU_OP, 6000, 100, external_id=8),
        ev("sm80_xmma_gemm", K.KERNEL, 110, 10, external_id=2),
        ev("transpose_kernel", K.KERNEL, 130, 10, external_id=2),
        ev("multi_tensor_apply_kernel", K.KERNEL, 330, 10, external_id=3),
        ev("copy_kernel", K.KERNEL, 350, 10, external_id=3), ev("mul_kernel_9", K.KERNEL, 360, 5, external_id=9),
        ev("ncclKernel_ZeRO", K.COMM_KERNEL, 500, 10, external_id=1),
        ev("implicit_convolve_sgemm", K.KERNEL, 2010, 10, external_id=4),
        ev("transpose_readWrite", K.KERNEL, 2110, 10, external_id=5),
        ev("vectorized_elementwise_kernel", K.KERNEL, 4010, 10, external_id=6),
        ev("hcom_broadcast_", K.COMM_KERNEL, 4050, 10, external_id=6),
        ev("ncclKernel_x", K.KERNEL, 5010, 10, external_id=7), ev("fused_kernel_a", K.KERNEL, 6010, 10, external_id=8),
        ev("ncclDevKernel_AllReduce", K.COMM_KERNEL, 7000, 10), ev("softmax_warp_forward", K.KERNEL, 7100, 10),
        ev("foo_bar_kernel", K.KERNEL, 7200, 10)])
    assert got == {
        "sm80_xmma_gemm": "matmul", "transpose_kernel": "copy / layout", "multi_tensor_apply_kernel": "optimizer",
        "copy_kernel": "optimizer", "mul_kernel_9": "optimizer", "ncclKernel_ZeRO": "optimizer",
        "implicit_convolve_sgemm": "convolution", "transpose_readWrite": "copy / layout",
        "vectorized_elementwise_kernel": "elementwise", "hcom_broadcast_": "communication",
        "ncclKernel_x": "communication", "fused_kernel_a": "attention", "ncclDevKernel_AllReduce": "communication",
        "softmax_warp_forward": "softmax", "foo_bar_kernel": "other"}


def test_families_without_host_operators():
    """No host rows: every kernel by category, then name: a COMM_KERNEL named like a GEMM is communication."""
    got = _families([ev("volta_sgemm_128x64_nn", K.KERNEL, 0, 10), ev("volta_sgemm_x", K.COMM_KERNEL, 20, 10),
                     ev("layer_norm_kernel", K.KERNEL, 40, 10)])
    assert got == {"volta_sgemm_128x64_nn": "matmul", "volta_sgemm_x": "communication",
                   "layer_norm_kernel": "normalization"}


def test_a_runtime_call_named_like_a_launcher_passes_no_family_on():
    """A RUNTIME call named HcclAllReduce (HOST_COMM_RE's prefix) inside aten::relu, around an aten::empty that
    launches elementwise_kernel: the runtime call names no family, so the kernel goes by its name: elementwise."""
    got = _families([ev("aten::relu", K.CPU_OP, 0, 100, external_id=1), ev("HcclAllReduce", K.RUNTIME, 10, 80),
                     ev("aten::empty", K.CPU_OP, 20, 50, external_id=2),
                     ev("elementwise_kernel", K.KERNEL, 30, 10, external_id=2)])
    assert got == {"elementwise_kernel": "elementwise"}


def test_group_family_most_time_then_alphabetical():
    """Labels other, matmul, attention. Group 0: matmul 10 vs attention 4 + 6 = 10, a tie: attention (a before m);
    group 1: other 3 vs matmul 2: other; group 2: matmul 1 (no tie with the zeros: a zero-time family loses);
    no groups: []."""
    labels = ["other", "matmul", "attention"]
    code, dur = np.array([1, 2, 2, 0, 1, 1]), np.array([10, 4, 6, 3, 2, 1])
    inv = np.array([0, 0, 0, 1, 1, 2])
    assert kf.group_family(code, labels, dur, inv, 3) == ["attention", "other", "matmul"]
    assert kf.group_family(code[:0], labels, dur[:0], inv[:0], 0) == []
