"""The findings use how far an operator is from its roof (issue 25: "no 'dominates' finding for an operator
already near its roof", the gain bounded by the roof): dominant_op on hand-made digests, each expected value
worked out by hand (70 of 100 ns of device self time in one operator, one step)."""
import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.rules.engine import RuleInput
from canning_tb.analysis.rules.time_rules import dominant_op


def window(roof_share: float | None) -> pb.Digest:
    d = pb.Digest()
    d.steps.add(number=1, start_ns=0, dur_ns=1000)
    d.average.total_ns, d.average.compute_ns = 1000, 100
    mm = d.ops_by_name.add(name="aten::mm", calls=1, device_self_ns=70, device_total_ns=70)
    d.ops_by_name.add(name="aten::add", calls=1, device_self_ns=30, device_total_ns=30)
    if roof_share is not None:
        mm.work.model, mm.work.roof_share = "matmul", roof_share
    return d


@pytest.mark.parametrize("roof_share, at_most", [(None, 70), (0.4, 42), (0.79, 14)])
def test_a_dominant_operator_is_bounded_by_its_roof(roof_share, at_most):
    f = dominant_op(RuleInput(window(roof_share)))
    assert f is not None and f.title == "aten::mm dominates" and f.figure_value == pytest.approx(0.7)
    assert f.at_most_ns == at_most  # 70 ns x (1 - share of roof), whole ns


@pytest.mark.parametrize("roof_share", [0.8, 0.95])
def test_an_operator_near_its_roof_is_not_called_dominant(roof_share):
    assert dominant_op(RuleInput(window(roof_share))) is None
