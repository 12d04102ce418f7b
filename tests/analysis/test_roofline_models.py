"""The FLOPs / bytes models (analysis/efficiency) against hand counts on the real fixtures' shapes.

The expected numbers are counted here from what the networks are, not from the code under test:
the Ascend fixtures train an AlexNet (fc 9216 -> 4096 -> 4096 -> 1000, batch 32; convolutions
3->64 11x11 to 55x55, 64->192 5x5 to 27x27, 192->384, 384->256, 256->256 3x3 to 13x13), fp32, whose
NPU kernels hold channels padded to C0 = 8 (NC1HWC0); the kernel times are summed from
kernel_details.csv read with the csv module; the V100 / DLRM numbers from the traces' Input Dims
read with json."""
import csv
import gzip
import json

import pytest

from conftest import fixture_path

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.ascend import read_ascend
from canning_tb.ingest.kineto import read_kineto

F32 = 4
B = 32  # AlexNet's batch


@pytest.fixture(scope="module")
def ascend_text():
    folder = fixture_path("ascend", "level2", "rank0_ascend_pt")
    return folder, build_digest(read_ascend(str(folder)))


@pytest.fixture(scope="module")
def resnet():
    path = fixture_path("kineto", "resnet50_v100", "worker0.1623143089861.pt.trace.json.gz")
    return path, build_digest(read_kineto(str(path)))


@pytest.fixture(scope="module")
def dlrm():
    path = fixture_path("param", "dlrm_8ranks", "worker0_step_12.1694128201545.pt.trace.json.gz")
    return path, build_digest(read_kineto(str(path)))


def _kernels(digest):
    return {k.name: k for k in digest.kernels_by_name}


def _csv_rows(folder):
    with open(folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_npu_matmul_kernels_are_the_fc_layers(ascend_text):
    """Forward: 2 x B x in x out per layer; backward: the input and the weight gradient of each."""
    folder, digest = ascend_text
    k = _kernels(digest)
    fc = [(9216, 4096), (4096, 4096), (4096, 1000)]
    forward = sum(2 * B * i * o for i, o in fc)
    assert k["aclnnAddmm_MatMulCommon_MatMulV2"].work.flops == forward
    # fc8, fc7 both gradients, fc6's input gradient by MatMulV2; fc6's weight gradient by MatMulV3
    assert k["aclnnMm_MatMulCommon_MatMulV2"].work.flops == 2 * B * (2 * 4096 * 1000 + 2 * 4096 * 4096 + 9216 * 4096)
    assert k["aclnnMm_MatMulV3Common_MatMulV3"].work.flops == 2 * B * 9216 * 4096
    # bytes: x, W, bias read, y written, each once (fp32)
    moved = sum(B * i + i * o + o + B * o for i, o in fc) * F32
    assert k["aclnnAddmm_MatMulCommon_MatMulV2"].work.bytes == moved
    # achieved = FLOPs over the kernels' own time, summed from the CSV
    dur_ns = sum(float(r["Duration(us)"]) for r in _csv_rows(folder) if r["Name"] == "aclnnAddmm_MatMulCommon_MatMulV2") * 1e3
    w = k["aclnnAddmm_MatMulCommon_MatMulV2"].work
    assert w.time_ns == pytest.approx(dur_ns, abs=3)
    assert w.tflops == pytest.approx(forward / dur_ns / 1e3, rel=1e-6)
    assert w.gbps == pytest.approx(moved / dur_ns, rel=1e-6) and w.intensity == pytest.approx(forward / moved)
    assert w.model == "matmul" and w.dtype == "fp32" and w.matrix


def _conv(ho, c_out, c_in, k):
    """2 x MACs of one conv layer, C_in padded to C0 = 8 as the cube computes it."""
    c_in_padded = -(-c_in // 8) * 8
    return 2 * B * ho * ho * c_out * c_in_padded * k * k


CONV = [_conv(55, 64, 3, 11), _conv(27, 192, 64, 5), _conv(13, 384, 192, 3), _conv(13, 256, 384, 3),
        _conv(13, 256, 256, 3)]


def test_npu_conv_kernels_are_alexnets_layers(ascend_text):
    _, digest = ascend_text
    k = _kernels(digest)
    assert k["Conv2D1"].work.flops == CONV[0]
    assert k["Conv2D2"].work.flops == CONV[1]
    assert k["Conv2D3"].work.flops == CONV[2]
    assert k["Conv2D4"].work.flops == CONV[3] + CONV[4]  # conv4 and conv5 share the kernel name
    # backward: the input gradient of conv5, conv4, conv3 (one kernel name) and conv2; none for conv1
    assert k["Conv2DBackpropInput5"].work.flops == CONV[2] + CONV[3] + CONV[4]
    assert k["Conv2DBackpropInput8"].work.flops == CONV[1]
    assert k["Conv2DBackpropFilter6"].work.flops == CONV[2] + CONV[3] + CONV[4]
    assert k["Conv2DBackpropFilter9"].work.flops == CONV[1]
    assert k["Conv2DBackpropFilter10"].work.flops == CONV[0]
    # bytes of Conv2D1: its NC1HWC0 input, FRACTAL_Z weight, bias and NC1HWC0 output as stored
    assert k["Conv2D1"].work.bytes == (B * 1 * 224 * 224 * 8 + 121 * 4 * 16 * 8 + 64 + B * 8 * 55 * 55 * 8) * F32


def test_npu_memory_kernels_have_bytes_of_their_tensors(ascend_text):
    folder, digest = ascend_text
    k = _kernels(digest)
    # TransData trans_TransData_0: [32,3,224,224] NCHW -> [32,1,224,224,8] NC1HWC0, a copy: no FLOPs
    w = k["trans_TransData_0"].work
    assert (w.flops, w.bytes, w.model) == (0, (B * 3 * 224 * 224 + B * 224 * 224 * 8) * F32, "copy")
    assert w.roof_share == -1 and w.bound == ""  # the NPU's peaks are not known (next test)
    # LogSoftmaxV2 [32, 1000] -> [32, 1000]: 5 FLOPs per element
    assert k[next(n for n in k if "LogSoftmaxV2" in n)].work.flops == 5 * B * 1000


def test_ascend_host_operators(ascend_text):
    _, digest = ascend_text
    ops = {(o.name, o.input_shapes): o for o in digest.ops_by_shape}
    addmm = ops["aten::addmm", "[[4096], [32, 9216], [9216, 4096], []]"].work
    assert addmm.flops == 2 * B * 9216 * 4096 and addmm.bytes == (4096 + B * 9216 + 9216 * 4096 + B * 4096) * F32
    mm = ops["aten::mm", "[[32, 1000], [1000, 4096]]"].work
    assert mm.flops == 2 * B * 1000 * 4096
    linear = ops["aten::linear", "[[32, 9216], [4096, 9216], [4096]]"]
    assert linear.work.flops == addmm.flops  # the same layer, one level up
    assert linear.work.time_ns == linear.device_total_ns and linear.work.tflops == pytest.approx(
        linear.work.flops / linear.device_total_ns / 1e3)
    # torch_npu records no stride / padding (no Concrete Inputs): the forward conv is not modelled
    conv = next(o for o in digest.ops_by_name if o.name == "aten::conv2d").work
    assert conv.model == "" and conv.flops == -1 and conv.tflops == -1


def test_unknown_ascend_soc_gives_no_peak_and_says_how(ascend_text):
    _, digest = ascend_text
    (peak,) = digest.roofline.peaks
    assert peak.kind == "npu" and not peak.matched and not dict(peak.tflops) and peak.hbm_gbps == -1
    assert "CANNING_DEVICE_PEAKS" in peak.note
    assert digest.roofline.mfu == -1 and any("CANNING_DEVICE_PEAKS" in n for n in digest.roofline.notes)
    # every modelled FLOP of the step is still counted: fc fwd + bwd and the 5 convs fwd + 4 dgrad + 5 wgrad
    fc = 2 * B * (9216 * 4096 + 4096 * 4096 + 4096 * 1000)
    assert digest.roofline.flops_per_step == pytest.approx(3 * fc + 2 * sum(CONV) + sum(CONV[1:]), rel=1e-12)


def test_npu_pipes_from_the_pmu(ascend_text):
    """The pipes are CANN's *_ratio of the kernel's core (the CSV's aic_mac_ratio -> cube ...)."""
    folder, digest = ascend_text
    row = next(r for r in _csv_rows(folder) if r["Name"] == "Conv2D1")
    (k,) = [k for k in digest.kernels_by_name if k.name == "Conv2D1"]
    pipes = {p.pipe: p.share for p in k.pipes}
    assert pipes["cube"] == pytest.approx(float(row["aic_mac_ratio"]), abs=1e-9)
    assert pipes["mte2"] == pytest.approx(float(row["aic_mte2_ratio"]), abs=1e-9)
    assert [p.share for p in k.pipes] == sorted(pipes.values(), reverse=True)


def _cpu_ops(path):
    return [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
            if e.get("cat") in ("cpu_op", "Operator") and e.get("ph") == "X"]


def test_v100_resnet_operators_and_their_roofs(resnet):
    path, digest = resnet
    ops = {(o.name, o.input_shapes): o for o in digest.ops_by_shape}
    fc = ops["aten::addmm", "[[1000], [32, 2048], [2048, 1000], [], []]"]
    assert fc.work.flops == fc.calls * 2 * B * 2048 * 1000
    assert fc.work.bytes == fc.calls * (1000 + B * 2048 + 2048 * 1000 + B * 1000) * F32
    # V100 SXM2 (datasheet): FP32 15.7 TFLOP/s, 900 GB/s; the roof at the fc's intensity
    intensity = fc.work.flops / fc.work.bytes
    roof = min(15.7, intensity * 900 / 1e3)
    assert fc.work.roof_tflops == pytest.approx(roof) and fc.work.roof_share == pytest.approx(fc.work.tflops / roof)
    assert fc.work.bound == ("compute" if intensity >= 15.7e3 / 900 else "memory")
    # the input gradient of a 1x1 conv 512 -> 2048 at 7x7: 2 x N x C_out x 7 x 7 x C_in
    dgrad = ops["aten::cudnn_convolution_backward_input", "[[], [32, 2048, 7, 7], [2048, 512, 1, 1], [], [], [], [], [], [], []]"]
    assert dgrad.work.flops == dgrad.calls * 2 * B * 2048 * 49 * 512
    # batch norm: the activation read and written, the four per-channel tensors read
    bn = ops["aten::cudnn_batch_norm", "[[32, 64, 112, 112], [64], [64], [64], [64], [], [], []]"]
    assert bn.work.bytes == bn.calls * (2 * B * 64 * 112 * 112 + 4 * 64) * F32
    # torch <= 1.10 recorded no stride: the forward conv is not modelled, never guessed
    assert ops["aten::cudnn_convolution", "[[32, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], []]"].work.model == ""
    assert digest.roofline.peaks[0].matched == "NVIDIA V100 SXM2"


def test_v100_mfu_is_the_modelled_matrix_work_at_peak(resnet):
    """MFU by a second reading of the trace: in each kept step, the FLOPs of the outermost modelled
    matrix calls (aten::linear, aten::mm outside linear, the conv input gradients), at 15.7 TFLOP/s
    (every matmul of the trace is FP32; no Tensor Core kernel), over the steps' time."""
    path, digest = resnet
    events = _cpu_ops(path)
    kept = [s for s in digest.steps if s.number in set(digest.average_steps)]

    def flops(e):
        dims = e["args"]["Input Dims"]
        if e["name"] == "aten::linear":
            (m, k), (n, _) = dims[0], dims[1]
            return 2 * m * n * k
        if e["name"] == "aten::mm":
            (m, k), (_, n) = dims[0], dims[1]
            return 2 * m * n * k
        g, w = dims[1], dims[2]
        return 2 * g[0] * g[1] * g[2] * g[3] * w[1] * w[2] * w[3]

    names = {"aten::linear", "aten::mm", "aten::cudnn_convolution_backward_input"}
    total = 0.0
    for s in kept:
        start, end = s.start_ns / 1e3, (s.start_ns + s.dur_ns) / 1e3
        total += sum(flops(e) for e in events if e["name"] in names and start <= e["ts"] < end)
    expected = total / 15.7e12 / (sum(s.dur_ns for s in kept) / 1e9)
    assert digest.roofline.mfu == pytest.approx(expected, rel=1e-6) and 0 < expected < 1


def test_dlrm_bmm_and_linear(dlrm):
    _, digest = dlrm
    ops = {(o.name, o.input_shapes): o.work for o in digest.ops_by_shape}
    bmm = ops["aten::bmm", "[[16, 16, 27], [16, 27, 27]]"]
    assert bmm.flops == 2 * 16 * 16 * 27 * 27 and bmm.bytes == (16 * 16 * 27 + 16 * 27 * 27 + 16 * 16 * 27) * F32
    linear = ops["aten::linear", "[[16, 367], [512, 367], [512]]"]
    assert linear.flops == 2 * 16 * 512 * 367 and linear.bytes == (16 * 367 + 512 * 367 + 512 + 16 * 512) * F32


def test_below_roof_finding(resnet):
    """The rule's candidate by its definition (docs/rules.md): the operator below half of its roof, with at
    least 5 % of the kernel time, whose time at its roof would save the most; none when all are near it."""
    import copy

    from canning_tb.analysis.rules.engine import RuleInput
    from canning_tb.analysis.rules.roofline_rules import below_roof
    _, digest = resnet
    total = sum(k.total_ns for k in digest.kernels_by_name)
    rows = [o for o in digest.ops_by_name if 0 <= o.work.roof_share < 0.5 and o.work.time_ns >= 0.05 * total]
    best = max(rows, key=lambda o: o.work.time_ns * (1 - o.work.roof_share))
    (hit,) = [h for h in digest.rule_hits if h.rule == "below_roof"]
    assert hit.title == f"{best.name} at {100 * best.work.roof_share:.1f}% of its roof"
    assert hit.gain_ns == int(best.work.time_ns * (1 - best.work.roof_share) / len(digest.average_steps))
    near = copy.deepcopy(digest)
    for o in near.ops_by_name:
        if o.work.roof_share >= 0:
            o.work.roof_share = 0.6
    assert below_roof(RuleInput(near)) is None
