"""analysis/compare/legacy.py (the first comparison, kept for the CLI JSON's `summary` and
`operators`) on small digests built here; every expected number worked out by hand."""
import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.compare.legacy import compare, per_step


def window(step_durations, ops):
    d = pb.Digest()
    for i, dur in enumerate(step_durations):
        d.steps.add(number=i + 1, dur_ns=dur)
    for name, calls, host, device in ops:
        d.ops_by_name.add(name=name, calls=calls, host_total_ns=host, device_total_ns=device)
    return d


def test_per_step_and_compare_by_hand():
    # base: two windows, 2 steps of 10 ms + 1 window without steps (counts as 1 step, 0 ns)
    base = per_step([window([10_000_000, 10_000_000], [("mm", 4, 6_000_000, 3_000_000)]),
                     window([], [("mm", 2, 3_000_000, 0), ("add", 3, 300_000, 0)])])
    assert base["windows"] == 2 and base["steps"] == 3
    assert base["step_ns"] == pytest.approx(20_000_000 / 3)
    assert base["ops"]["mm"] == pytest.approx([2, 3_000_000, 1_000_000])  # 6 calls, 9 ms, 3 ms over 3 steps
    exp = per_step([window([5_000_000, 7_000_000], [("mm", 2, 2_000_000, 1_000_000), ("relu", 2, 4_000_000, 0)])])
    assert exp["steps"] == 2 and exp["step_ns"] == 6_000_000
    summary, rows = compare(base, exp)
    assert summary["base_step_ms"] == pytest.approx(20 / 3) and summary["exp_step_ms"] == pytest.approx(6)
    assert summary["delta_step_ms"] == pytest.approx(6 - 20 / 3)
    assert summary["delta_step_pct"] == pytest.approx(100 * (6 - 20 / 3) / (20 / 3))
    # host ms/step: mm 3 -> 1 (delta -2), relu 0 -> 2 (+2), add 0.1 -> 0 (-0.1): largest change first
    assert [r["name"] for r in rows][2] == "add" and {r["name"] for r in rows[:2]} == {"mm", "relu"}
    mm = next(r for r in rows if r["name"] == "mm")
    assert (mm["base_calls_per_step"], mm["exp_calls_per_step"]) == pytest.approx((2, 1))
    assert mm["delta_host_ms_per_step"] == pytest.approx(-2)
    assert (mm["base_device_ms_per_step"], mm["exp_device_ms_per_step"]) == pytest.approx((1, 0.5))


def test_no_baseline_step_time():
    summary, _ = compare(per_step([window([], [])]), per_step([window([1_000_000], [])]))
    assert summary["delta_step_pct"] is None and summary["delta_step_ms"] == pytest.approx(1)
