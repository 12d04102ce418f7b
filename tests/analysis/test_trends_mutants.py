"""The Scalars tab's figures of a window (analysis/trends.py) on digests written by hand: each value worked
out from the digest's fields in the docstrings (issue 46, mutation testing). The older tests reach it
only through whole digests of fixture windows."""
import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.trends import trend_scalars, trend_step

CATEGORIES = ("compute", "overlapped", "communication", "memcpy", "memset", "runtime", "dataloader", "host", "idle",
              "device_wait")  # digest.proto's Breakdown fields, less total_ns


def _digest(total_ns=2_000_000, steps=(4, 5, 6)):
    """Mean step 2 ms: compute 0.5 ms, communication 0.3 ms, memcpy -1 (unknown), the rest 0. Memory: cuda:0
    peaks at 0 (none), CPU at 100 B, npu:0 at 5000 B. Ops by host self time only (no device work but the
    compute): x 3 ms, ProfilerStep#5 9 ms (a step range, not an op), y 6 ms."""
    d = pb.Digest()
    for n in steps:
        d.steps.add(number=n, dur_ns=total_ns)
    a = d.average
    a.total_ns, a.compute_ns, a.communication_ns, a.memcpy_ns = total_ns, 500_000, 300_000, -1
    for device, peak in (("cuda:0", 0), ("CPU", 100), ("npu:0", 5000)):
        d.memory.add(device=device, peak_allocated_bytes=peak)
    for name, ns in (("x", 3_000_000), ("ProfilerStep#5", 9_000_000), ("y", 6_000_000)):
        d.ops_by_name.add(name=name, host_self_ns=ns, device_self_ns=ns // 1000)
    return d


def test_the_figures_by_hand():
    """step 2 ms; shares: compute 0.25, communication 0.15, memcpy unknown (left out), the other seven 0.0;
    communication not hidden 0.15; the memory peak of the first device other than CPU with a peak: npu:0,
    5000; the slowest op by device self (the window has device work): y, 6 us over 3 steps = 0.002 ms."""
    out = trend_scalars(_digest())
    shares = {c: 0.0 for c in CATEGORIES if c != "memcpy"} | {"compute": 0.25, "communication": 0.15}
    assert out == pytest.approx({"step_time_ms": 2.0, **{f"breakdown_share/{c}": v for c, v in shares.items()},
                                 "comm_not_hidden_share": 0.15, "memory_peak_bytes": 5000.0,
                                 "top_op_ms_per_step": 0.002}, rel=1e-12)  # exact: 2e6 / 1e6, 6000 / 3 / 1e6
    assert isinstance(out["memory_peak_bytes"], float)


def test_a_cpu_peak_only_and_no_step_time():
    """Mean step 0: no step time, no share (communication not hidden needs a step time too); only CPU has a
    peak: 100; no step at all: the slowest op's time is over one step, 6 us = 0.006 ms."""
    d = _digest(total_ns=0, steps=())
    del d.memory[2]
    assert trend_scalars(d) == pytest.approx({"memory_peak_bytes": 100.0, "top_op_ms_per_step": 0.006}, rel=1e-12)


def test_nothing_recorded_gives_no_figure():
    assert trend_scalars(pb.Digest()) == {}


def test_one_step_and_one_op():
    """One step of 1 ms, one op of 0.25 ms device self: 0.25 ms per step."""
    d = pb.Digest()
    d.steps.add(number=1, dur_ns=1_000_000)
    d.average.total_ns, d.average.compute_ns = 1_000_000, 1_000_000
    d.ops_by_name.add(name="z", device_self_ns=250_000)
    out = trend_scalars(d)
    assert (out["step_time_ms"], out["top_op_ms_per_step"], out["breakdown_share/compute"]) == \
        pytest.approx((1.0, 0.25, 1.0))


@pytest.mark.parametrize("numbers, fallback, x", [
    ((4, 9, 6), 2, 9), ((0, 0), 3, 3), ((), 5, 5), ((0, 1), 7, 1), ((-3,), 8, 8),
])
def test_the_x_is_the_last_step_number_else_the_position(numbers, fallback, x):
    """The largest step number above 0 (a step numbered 0 or less names none), else the fallback."""
    d = pb.Digest()
    for n in numbers:
        d.steps.add(number=n)
    assert trend_step(d, fallback) == x


def test_a_one_ns_step_and_a_one_byte_peak_are_figures():
    """The smallest known values: a mean step of 1 ns (1e-6 ms, all of it compute) and a peak of 1 B."""
    d = pb.Digest()
    d.average.total_ns, d.average.compute_ns = 1, 1
    d.memory.add(device="npu:0", peak_allocated_bytes=1)
    out = trend_scalars(d)
    assert (out["step_time_ms"], out["memory_peak_bytes"], out["breakdown_share/compute"]) == (1e-6, 1.0, 1.0)
