"""A real 2-process torch.distributed (gloo, CPU) run of examples/train_ddp.py with our handler."""
import gzip
import json
import math
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from _procs import communicate_all

REPO = Path(__file__).resolve().parents[2]
TRACE_RE = re.compile(r"^(?P<worker>.+?)\.(?P<window>\d+)\.pt\.trace\.json(\.gz)?$")


def torch_json(data: bytes) -> dict:
    """torch's trace as json reads it; torch 2.13's Python tracer now and then writes a frame's name with
    a bare quote in it (tests/ingest/test_unescaped_quotes.py): such name lines are escaped here, by a
    regular expression over whole lines, before json reads them."""
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        def escape(m):
            return m[1] + m[2].replace(b'\\"', b'"').replace(b'"', b'\\"') + b'",'
        return json.loads(re.sub(rb'(?m)^(\s*"name": ")(.*)",$', escape, data))


def run_train_ddp(logdir, world: int = 2, steps: int = 10):
    """examples/train_ddp.py on `world` gloo ranks, as torchrun runs it without its launcher process (one process
    per rank, env:// rendezvous); (procs, outputs), every rank exited 0. A hung rank is killed on every path."""
    port, procs = free_port(), []
    for rank in range(world):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world),
               "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        procs.append(subprocess.Popen([sys.executable, str(REPO / "examples" / "train_ddp.py"), str(logdir), str(steps)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = communicate_all(procs, 120)
    assert [p.returncode for p in procs] == [0] * world, outs
    return procs, outs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.timed
def test_two_ranks_write_their_windows(tmp_path):
    pytest.importorskip("torch.distributed")
    logdir = tmp_path / "demo"
    world = 2
    procs, outs = run_train_ddp(logdir, world)
    assert "done" in outs[0]
    names = sorted(os.listdir(logdir))
    assert not [n for n in names if n.startswith(".") or n.endswith(".tmp")]
    pids = {}
    for rank in range(world):
        traces = [n for n in names if TRACE_RE.match(n) and n.startswith(f"rank{rank}.")]
        mans = [n for n in names if n.endswith(".canning.json") and n.startswith(f"rank{rank}.")]
        assert len(traces) == 2 and len(mans) == 2  # schedule(wait=1, warmup=1, active=2, repeat=2)
        for i, (t, m) in enumerate(zip(traces, mans)):
            man = json.loads((logdir / m).read_text())
            assert (man["rank"], man["world_size"], man["local_rank"], man["window"]) == (rank, world, rank, i)
            assert man["steps"] == [4 * i + 2, 4 * i + 3]
            assert m == TRACE_RE.match(t)["worker"] + "." + TRACE_RE.match(t)["window"] + ".canning.json"
            trace = torch_json(gzip.decompress((logdir / t).read_bytes()))
            assert trace["distributedInfo"]["rank"] == rank  # Kineto's own record agrees with the manifest
            assert any(e.get("name", "").startswith("ProfilerStep#") for e in trace["traceEvents"])
            pids[rank] = man["pid"]
    assert pids[0] != pids[1]
    assert len([n for n in names if n.startswith("events.out.tfevents.")]) == 2

    # The communication of the real gloo run, across both ranks, as the views show it.
    from canning_tb.analysis.cluster import analyse_ranks
    from canning_tb.store import Store
    store = Store(str(tmp_path))
    (run,) = store.runs()
    digests = [store.digest(run, w.name, store.windows(run, w.name)[0].id) for w in store.workers(run)]
    assert sorted(d.window.rank for d in digests) == [0, 1]
    cluster = analyse_ranks(digests)
    assert sorted(r["rank"] for r in cluster["ranks"]) == [0, 1]
    # no kernels on the CPU: the host operators are what computes, never an empty bar
    assert cluster["compute_source"] == "host"
    assert all(0 < r["compute_ns"] < r["step_ns"] for r in cluster["ranks"])
    for d in digests:
        first = next(n for n in names if TRACE_RE.match(n) and n.startswith(f"rank{d.window.rank}."))
        raw = torch_json(gzip.decompress((logdir / first).read_bytes()))["traceEvents"]
        # independent: gloo runs each all-reduce as one "gloo:all_reduce" range
        want = sum(1 for e in raw if e.get("ph") == "X" and e.get("name") == "gloo:all_reduce")
        got = {c.kind: c for c in d.communication.collectives}
        assert want > 0 and got["AllReduce"].calls == want
        # independent: the message is the float32 tensors each range was given
        nbytes = sum(4 * math.prod(dims) for e in raw if e.get("ph") == "X" and e.get("name") == "gloo:all_reduce"
                     for dims, t in zip(e["args"]["Input Dims"], e["args"]["Input type"]) if t == "float")
        assert got["AllReduce"].bytes == nbytes > 0
        assert got["AllReduce"].bandwidth_gbps == pytest.approx(nbytes / got["AllReduce"].total_ns)
        assert 0 < d.communication.total_ns <= d.window.end_ns - d.window.start_ns
