"""A real torch.profiler run on the CPU through ps.Profile(with_flops=True): torch's own FLOP counts
(its events' `flops`, computed in memory: Kineto writes none into the Chrome trace) against our
models on the exported trace, per operator and input shapes; the attention FLOPs by hand (torch
counts none for it); op_summary() shows the modelled columns."""
import pytest

torch = pytest.importorskip("torch")
from canning import profiling_suite as ps  # noqa: E402

SDPA_SHAPE = (2, 4, 8, 16)  # B, H, L, E


def work():
    conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
    x = torch.randn(2, 3, 16, 16, requires_grad=True)
    conv(x).sum().backward()
    torch.mm(torch.randn(4, 5), torch.randn(5, 6))
    torch.addmm(torch.randn(6), torch.randn(4, 5), torch.randn(5, 6))
    torch.bmm(torch.randn(3, 4, 5), torch.randn(3, 5, 6))
    q = torch.randn(*SDPA_SHAPE)
    torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)


@pytest.fixture(scope="module")
def prof():
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], record_shapes=True, with_flops=True) as p:
        work()
    return p


def test_with_flops_reaches_torch(prof):
    assert prof.settings["with_flops"] is True
    counted = {e.name: e.flops for e in prof.events() if e.flops}
    assert {"aten::mm", "aten::addmm", "aten::bmm", "aten::conv2d"} <= set(counted), counted


def test_our_models_equal_torchs_counts(prof):
    digest = prof._digest_of_last()
    ours = {(o.name, o.input_shapes): o.work for o in digest.ops_by_shape}
    checked = 0
    for e in prof.events():
        if not e.flops or e.name not in ("aten::mm", "aten::addmm", "aten::bmm", "aten::conv2d"):
            continue
        shapes = str([list(s) for s in e.input_shapes])
        rows = [w for (name, s), w in ours.items() if name == e.name and s == shapes]
        assert rows, (e.name, shapes, [k for k in ours if k[0] == e.name])
        (w,) = rows
        assert w.flops == e.flops, (e.name, shapes)  # one call per shape in the workload
        checked += 1
    assert checked == 4


def test_attention_by_hand(prof):
    digest = prof._digest_of_last()
    b, h, lq, e = SDPA_SHAPE
    pairs = b * h * lq * (lq + 1) // 2  # causal: query i sees keys 0..i
    (w,) = [o.work for o in digest.ops_by_name if o.name == "aten::scaled_dot_product_attention"]
    assert w.flops == 2 * pairs * (e + e) and w.bytes == 4 * b * h * lq * e * 4
    assert w.model == "attention" and w.time_ns > 0 and w.tflops == pytest.approx(w.flops / w.time_ns / 1e3)


def test_op_summary_has_the_modelled_columns(prof):
    table = prof.op_summary()
    assert table.columns[-3:] == ["GFLOP", "TFLOP/s", "Roof(%)"]
    rows = {r[0]: r for r in table.rows}
    assert rows["aten::mm"][-3] == 2 * 4 * 5 * 6 / 1e9 and rows["aten::mm"][-2] is not None
    assert rows["aten::mm"][-1] is None  # a CPU: no peak, no share of roof
