"""A copy over PCIe is not a slow HBM copy (issue 20: the right cause): an operator whose device time is
mostly Memcpy HtoD / DtoH / HtoH / PtoP is bound by the link, which no trace gives a bandwidth for, so it
gets bound "link", no share of roof, and no below-roof finding. Expected from a raw join of the trace
(tests/_raw_kineto.py: each memcpy to the operator that launched it), never from the analysis."""
import re

import pytest

from _raw_kineto import Trace
from canning_tb.analysis.build import build_digest
from canning_tb.ingest.kineto.read import read_kineto
from conftest import fixture_path

OVER_LINK = re.compile(r"Memcpy (HtoD|DtoH|HtoH|PtoP)")


@pytest.fixture(scope="module")
def control():
    path = next(fixture_path("hta", "trace_diff", "control").glob("*.json.gz"))
    return Trace(path), build_digest(read_kineto(str(path)))


def test_a_copy_mostly_over_pcie_is_bound_by_the_link(control):
    raw, digest = control
    rows = raw.op_rows()
    link = {name: sum(d.dur for d, op in raw.owner.items() if op.name == name and OVER_LINK.match(d.name))
            for name in rows}
    # the hand reading: aten::copy_'s device time is mostly copies between host and device
    assert link["aten::copy_"] > 0.5 * rows["aten::copy_"]["device_total"]
    copy = next(o for o in digest.ops_by_name if o.name == "aten::copy_")
    assert copy.device_total_ns == rows["aten::copy_"]["device_total"]
    assert copy.work.bound == "link" and copy.work.roof_share == -1 and copy.work.gbps > 0
    # rows not mostly over a link keep their roof
    judged = [o for o in digest.ops_by_name if o.work.model and o.name in rows
              and link[o.name] <= 0.5 * rows[o.name]["device_total"] and o.device_total_ns > 0]
    assert judged and all(o.work.bound != "link" for o in judged)
    assert not [h for h in digest.rule_hits if h.rule == "below_roof" and "aten::copy_" in h.title]
