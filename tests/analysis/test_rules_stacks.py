"""Name rules on a trace recorded with_stack: the patterns are matched once per distinct name, never
on the call stacks (kilobytes each, one per Python frame) that the same string table holds. Decided
on what the patterns are asked to read, not on wall-clock time."""
import re

import pytest

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.common import ids_matching
from canning_tb.ingest.kineto.read import read_kineto

DEPTH = 30  # frames per stack: about 1.5 KB each


def _descend(torch, w, x, depth, path):
    if depth == 0:
        return torch.relu(x @ w)
    return (_left if path & 1 else _right)(torch, w, x, depth - 1, path >> 1)


def _left(torch, w, x, depth, path):
    return _descend(torch, w, x, depth, path)


def _right(torch, w, x, depth, path):
    return _descend(torch, w, x, depth, path)


@pytest.fixture(scope="module")
def stack_trace(tmp_path_factory):
    """A real torch.profiler trace, with_stack=True, each operator at the end of its own deep call chain."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, schedule
    path = tmp_path_factory.mktemp("stacks") / "deep.pt.trace.json"
    w = torch.randn(8, 8)
    with profile(activities=[ProfilerActivity.CPU], with_stack=True, schedule=schedule(wait=0, warmup=1, active=2),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
        for _ in range(3):
            x = torch.randn(2, 8)
            for i in range(12):
                x = _descend(torch, w, x, DEPTH, i * 2654435761 % (1 << 30))
            prof.step()
    return read_kineto(str(path))


class Recorder:
    """A pattern that remembers every string it was asked to search."""

    def __init__(self, pattern: str):
        self.rx, self.seen = re.compile(pattern), []
        self.pattern, self.flags = f"recorder:{pattern}", self.rx.flags

    def search(self, text):
        self.seen.append(text)
        return self.rx.search(text)


def test_patterns_read_names_not_stacks(stack_trace):
    table = stack_trace
    names = {table.strings[int(i)] for i in set(table.events["name"].tolist())}
    stacks = [s for s in table.strings.values if s.count(";") >= DEPTH]
    assert len(stacks) >= 12  # independent: the deep stacks are there, in the same string table
    rec = Recorder(r"relu")
    found = ids_matching(table, rec)
    assert set(rec.seen) == names and not set(rec.seen) & set(stacks)
    assert {table.strings[int(i)] for i in found} == {n for n in names if "relu" in n}
    digest = build_digest(table)
    assert any(o.name == "aten::relu" for o in digest.ops_by_name)
