"""Step, window and module FLOPs and MFU on a real small transformer (2 layers, d = 64, 4 heads, causal
SDPA, a 256-wide MLP) trained for real on the CPU under torch.profiler (record_shapes=True), in fp32 and
in bf16. Every expected number is worked out here from the model's sizes (B, T, D, H, F), never from the
models of analysis/efficiency; the step durations are read from the trace with json.

The peak: canning-tb models no CPU peak (peaks.window_peaks lists accelerators only), so a CPU window's
MFU is unknown ("-"), whatever CANNING_DEVICE_PEAKS says. To check the MFU arithmetic on the same real
trace, a copy of it states one device in `deviceProperties` (a stand-in: there is no GPU here) whose peak
is set through the API (CANNING_DEVICE_PEAKS: fp32 0.5, bf16 1.0 TFLOP/s)."""
import json
from decimal import Decimal

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from canning_tb.analysis.build import build_digest  # noqa: E402
from canning_tb.ingest.kineto.read import read_kineto  # noqa: E402

B, T, D, H, F, LAYERS = 2, 16, 64, 4, 256, 2
DH = D // H  # 16, the head dim
M = B * T  # 32 rows in every linear: x is [B, T, K], so M = B x T (not B)
PEAK = {"float32": 0.5, "bfloat16": 1.0}  # TFLOP/s, given with CANNING_DEVICE_PEAKS below
SIZE = {"float32": 4, "bfloat16": 2}  # bytes per element


def lin(n, k):
    """FLOPs of one linear y[M, N] = x[M, K] W[N, K]^T: a multiply and an add per term."""
    return 2 * M * n * k


# Per layer: qkv (K=64 -> N=192), out (64 -> 64), ff1 (64 -> 256), ff2 (256 -> 64)
LINEARS = [(3 * D, D), (D, D), (F, D), (D, F)]
LAYER_LINEAR = sum(lin(n, k) for n, k in LINEARS)  # 786432 + 262144 + 1048576 + 1048576 = 3145728
# Causal attention, query i sees keys 0..i: T (T + 1) / 2 = 136 (query, key) pairs per head
PAIRS = B * H * T * (T + 1) // 2  # 2 x 4 x 136 = 1088
ATTN_FWD = 2 * PAIRS * (DH + DH)  # Q K^T and P V: 2 x 1088 x 32 = 69632
ATTN_BWD = 2 * PAIRS * (3 * DH + 2 * DH)  # Q K^T again, dV, dP, dQ, dK: 2 x 1088 x 80 = 174080
FORWARD = LAYERS * (LAYER_LINEAR + ATTN_FWD)  # 2 x 3215360 = 6430720
# Backward of each linear: grad input [M, N] @ W[N, K] and grad weight dy^T[N, M] @ x[M, K], each as many
# FLOPs as the forward, except the first qkv: its input x needs no gradient, only its weight's is computed.
BACKWARD = LAYERS * (2 * LAYER_LINEAR + ATTN_BWD) - lin(3 * D, D)  # 2 x 6465536 - 786432 = 12144640
STEP = FORWARD + BACKWARD  # 18575360 per training step (the loss .sum() and the bias sums are not matrix work)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.out = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.ff1, self.ff2 = nn.Linear(D, F), nn.Linear(F, D)

    def forward(self, x):
        q, k, v = self.qkv(x).view(B, T, 3, H, DH).permute(2, 0, 3, 1, 4)
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a.transpose(1, 2).reshape(B, T, D))
        return x + self.ff2(torch.relu(self.ff1(x)))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer() for _ in range(LAYERS)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


@pytest.fixture(scope="module", params=["float32", "bfloat16"])
def run(request, tmp_path_factory):
    """(dtype name, the CPU trace, a copy stating the stand-in device, the trace's events)."""
    from torch.profiler import ProfilerActivity, profile, schedule
    dtype = request.param
    folder = tmp_path_factory.mktemp(dtype)
    path = folder / "cpu.pt.trace.json"
    torch.manual_seed(0)
    model = Model().to(getattr(torch, dtype))
    x = torch.randn(B, T, D, dtype=getattr(torch, dtype))
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path)), record_shapes=True,
                 with_modules=True, with_stack=True) as prof:
        for _ in range(3):
            model(x).sum().backward()
            prof.step()
    raw = json.loads(path.read_text())
    raw["deviceProperties"] = [{"id": 0, "name": "Stand-in GPU", "totalGlobalMem": 80 << 30,
                                "computeMajor": 9, "computeMinor": 0, "numSms": 132}]
    device = folder / "device.pt.trace.json"
    device.write_text(json.dumps(raw))
    return dtype, path, device, raw["traceEvents"]


def ns(us) -> int:
    return int(Decimal(str(us)) * 1000)


def steps_by_hand(events) -> dict:
    """{step number: (start ns, dur ns)} of the ProfilerStep#N annotations (a CPU window: no device end)."""
    return {int(e["name"].split("#")[1]): (ns(e["ts"]), ns(e["dur"])) for e in events
            if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")}


def test_each_training_step_holds_the_hand_counted_flops(run):
    _, path, _, events = run
    d = build_digest(read_kineto(str(path)))
    hand = steps_by_hand(events)
    assert len(hand) == 2
    assert {s.number: (s.start_ns, s.dur_ns) for s in d.steps} == hand
    for s in d.steps:
        assert s.roofline.flops == STEP  # 18575360
    assert d.roofline.flops_per_step == STEP


def test_module_flops_are_their_forward_calls_by_hand(run):
    """A module's FLOPs: the matrix work inside its calls (its children's too), over the window's 2 steps.
    The backward runs outside the modules' calls (autograd), so only the forward counts in them."""
    _, path, _, _ = run
    d = build_digest(read_kineto(str(path)))
    got = {m.path: m.roofline.flops for m in d.modules}
    expected = {"Model_0": 2 * FORWARD}  # 12861440
    for layer in range(LAYERS):
        expected[f"Model_0/Layer_{layer}"] = 2 * (LAYER_LINEAR + ATTN_FWD)  # 6430720
        for i, (n, k) in enumerate(LINEARS):  # torch names the Linear modules in call order: Linear_0..7
            expected[f"Model_0/Layer_{layer}/Linear_{4 * layer + i}"] = 2 * lin(n, k)
    assert got == expected


def test_roofline_points_move_each_dtypes_bytes(run):
    """Per call: every input read once, the result written once, at the dtype's size (bf16 2, fp32 4)."""
    dtype, path, _, _ = run
    s = SIZE[dtype]
    d = build_digest(read_kineto(str(path)))
    points = {(p.name, p.input_shapes): p for p in d.roofline.points}

    def per_call(name, shapes):
        p = points[(name, shapes)]
        assert p.work.dtype == {"float32": "fp32", "bfloat16": "bf16"}[dtype]
        return p.work.flops / p.calls, p.work.bytes / p.calls

    for n, k in LINEARS:
        # x[2, 16, K], W[N, K], b[N] read; y[2, 16, N] written
        shapes = f"[[{B}, {T}, {k}], [{n}, {k}], [{n}]]"
        assert per_call("aten::linear", shapes) == (lin(n, k), (M * k + n * k + n + M * n) * s)
    qkv = B * H * T * DH  # 2048 elements in each of q, k, v, the output and their gradients
    sdpa = "[[2, 4, 16, 16], [2, 4, 16, 16], [2, 4, 16, 16], [], [], [], [], []]"
    assert per_call("aten::scaled_dot_product_attention", sdpa) == (ATTN_FWD, 4 * qkv * s)  # q, k, v, out
    # backward: grad_out, q, k, v, out read, dq, dk, dv written (8 tensors), and the fp32 log-sum-exp [B, H, T]
    back = [x for x in points if x[0] == "aten::_scaled_dot_product_flash_attention_for_cpu_backward"]
    assert len(back) == 1
    assert per_call(*back[0]) == (ATTN_BWD, 8 * qkv * s + B * H * T * 4)


def test_a_cpu_window_has_no_peak_so_its_mfu_is_unknown(run, monkeypatch):
    monkeypatch.setenv("CANNING_DEVICE_PEAKS", '{"*": {"fp32": 0.5, "bf16": 1.0}}')
    _, path, _, _ = run
    d = build_digest(read_kineto(str(path)))
    assert len(d.roofline.peaks) == 0
    assert d.roofline.mfu == -1
    assert [s.roofline.mfu for s in d.steps] == [-1, -1]
    assert {m.roofline.mfu for m in d.modules} == {-1}
    assert {m.roofline.flops for m in d.modules} != {-1}  # the FLOPs are known all the same


def test_step_and_window_mfu_against_the_stated_peak(run, monkeypatch):
    dtype, _, device, events = run
    monkeypatch.setenv("CANNING_DEVICE_PEAKS", json.dumps({"Stand-in GPU": {"fp32": 0.5, "bf16": 1.0}}))
    d = build_digest(read_kineto(str(device)))
    at_peak_ns = STEP / (PEAK[dtype] * 1e12) * 1e9  # fp32: 37150.72 ns; bf16: 18575.36 ns
    hand = steps_by_hand(events)
    for s in d.steps:
        assert s.roofline.mfu == pytest.approx(at_peak_ns / hand[s.number][1], rel=1e-12)
    kept = list(d.average_steps)
    assert kept
    # the window's: the kept steps' time at peak over their summed time (not the mean of the steps' MFU)
    assert d.roofline.mfu == pytest.approx(len(kept) * at_peak_ns / sum(hand[n][1] for n in kept), rel=1e-12)
    # a module's MFU is over its device time: no kernel ran in it (a CPU run), so it stays unknown
    assert {m.roofline.mfu for m in d.modules} == {-1}
    assert {m.device_total_ns for m in d.modules} == {0}
