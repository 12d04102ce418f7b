"""`canning-prof capture`'s status line: a job whose pace is not known yet (no rank has stepped twice) says so;
it never prints 0 steps/s (unknown is never 0)."""
from types import SimpleNamespace

import pytest

from canning_tb.cli.capture import _show


def _job(rate):
    return {"job": {"world_size": 2, "live_ranks": [0, 1], "step": 12, "steps_per_s": rate}, "kind": "canning"}


@pytest.mark.parametrize("rate, want", [(None, "(pace unknown yet)"), (2.5, "(2.50 steps/s)"), (0.0, "(0.00 steps/s)")])
def test_the_pace(capsys, rate, want):
    assert _show(SimpleNamespace(format="text"), "run1", _job(rate)) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line == f"run run1: 2 of 2 ranks watching, at step 12 {want}"
