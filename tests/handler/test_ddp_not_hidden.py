"""Issue 45: the demo's "communication not overlapped" per step against a join of the raw gloo ranges.

A real 2-rank gloo run of examples/train_ddp.py (CPU, two windows per rank). The issue joined the
`gloo:*` ranges with the host operators and found our figure up to 2x its join in the first window
(rank 1: 22.0 ms against 11.44 ms), the second window matching. Read here from the raw traces, in
plain Python (sorted intervals, no code of ours), per step:

- naive: the gloo ranges' union, less the CPU operators of the threads that run no gloo range,
  the `c10d::` ops left out of that set (they only queue the collective);
- ours (the one definition, analysis/steps.host_compute): the same, less also the time the main
  thread spends inside a `c10d::allreduce_` call. DDP calls it from its gradient hook, inside
  `autograd::engine::evaluate_function: AccumulateGrad`; that parent holds no operator of its own
  while the call runs, so the naive join counts the call's time as compute that hides the gloo range.
  On this machine such calls last up to ~15 ms when the enqueue blocks (2 ranks on 2 shared cores),
  far longer than the range they queue; in a window where they are short the two joins agree, which
  is why the issue's second window matched.

The figure is checked against the second join, step by step; the first join differs from it by
the gloo time under a c10d call (printed): the naive join was wrong, not the figure.
"""
import gzip
import os

import pytest

from _spans import inter, length_in, minus, union
from test_handler_ddp import TRACE_RE, run_train_ddp, torch_json


def joins(raw):
    """Per step of a raw trace: (naive not hidden, not hidden less the c10d calls, gloo under both a
    c10d call and the naive compute), in ns."""
    xs = [e for e in raw if e.get("ph") == "X"]

    def span(e):
        return [round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)]
    gloo = [e for e in xs if e["name"].startswith("gloo:")]
    threads = {e["tid"] for e in gloo}
    ops = [e for e in xs if e.get("cat") == "cpu_op" and e["tid"] not in threads]
    c10d = union([span(e) for e in ops if e["name"].startswith("c10d::")])
    naive_compute = union([span(e) for e in ops if not e["name"].startswith("c10d::")])
    comm = union([span(e) for e in gloo])
    naive, ours = minus(comm, naive_compute), minus(comm, minus(naive_compute, c10d))
    gap = inter(inter(comm, c10d), naive_compute)
    out = {}
    for e in xs:
        if e["name"].startswith("ProfilerStep#"):
            lo, hi = span(e)
            out[int(e["name"].split("#")[1])] = (length_in(naive, lo, hi), length_in(ours, lo, hi), length_in(gap, lo, hi))
    return out


@pytest.mark.slow
@pytest.mark.timed
def test_not_hidden_communication_is_the_join_without_the_c10d_calls(tmp_path):
    pytest.importorskip("torch.distributed")
    logdir = tmp_path / "demo"
    run_train_ddp(logdir, 2)

    from canning_tb.store import Store
    store = Store(str(tmp_path))
    (run,) = store.runs()
    names = sorted(os.listdir(logdir))
    checked, gaps = 0, 0
    for worker in store.workers(run):
        for i, window in enumerate(store.windows(run, worker.name)):
            digest = store.digest(run, worker.name, window.id)
            # the rank's i-th trace file (windows in the order they were written, as the names sort)
            mine = [n for n in names if TRACE_RE.match(n) and n.startswith(f"rank{digest.window.rank}.")]
            raw = torch_json(gzip.decompress((logdir / mine[i]).read_bytes()))
            per_step = joins(raw["traceEvents"])
            assert sorted(per_step) == sorted(s.number for s in digest.steps)
            for step in digest.steps:
                naive, ours, gap = per_step[step.number]
                got = step.breakdown.communication_ns
                # µs timestamps rounded to ns at each end: a few ns per range
                assert abs(got - ours) <= 200, (worker.name, step.number, got, ours, naive)
                print(f"rank {digest.window.rank} step {step.number}: ours {got / 1e6:.3f} ms, naive join "
                      f"{naive / 1e6:.3f} ms, gloo under a c10d call {gap / 1e6:.3f} ms")
                checked += 1
                gaps += gap > 0
    assert checked == 8  # 2 ranks x 2 windows x 2 steps
    print(f"steps where the naive join differs: {gaps} of {checked}")
