"""The handler's writer thread stays out of the user's trace. torch's Python tracer (with_stack) hooks every
thread alive when a window starts; the writer publishing window 0 is alive when window 1 starts, so before
the fix its frames (the scalars' first imports above all) were written into window 1: in a run of
examples/train_ddp.py, 77,205 of a window's 79,401 events. A real torch.profiler run, two windows back to
back so that the writer works while window 1 records."""
import gzip
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")


JOB = """
import sys, threading, time, torch
from canning import profiling_suite as ps
assert "tensorboard" not in sys.modules  # a fresh process: the writer's imports are still to come
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 64)
# two windows back to back: window 1 starts as soon as window 0 is handed to the writer
with ps.Profile(activities=[ps.ProfilerActivity.CPU], with_stack=True,
                schedule=ps.schedule(wait=0, warmup=0, active=4, repeat=2),
                on_trace_ready=ps.tensorboard_trace_handler(sys.argv[1], digest=False)) as prof:
    for _ in range(8):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
        time.sleep(0.1)  # a window long enough to see what the writer does meanwhile
        prof.step()
print(threading.main_thread().native_id)
"""


def _window_events(logdir, index: int) -> list:
    (name,) = [n for n in os.listdir(logdir) if n.endswith(f"{index:05d}.pt.trace.json.gz")]
    return json.loads(gzip.decompress((logdir / name).read_bytes()))["traceEvents"]


def test_the_writers_frames_stay_out_of_the_next_window(tmp_path):
    out = subprocess.run([sys.executable, "-c", JOB, str(tmp_path)], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    main = int(out.stdout.split()[-1])
    py = [e for e in _window_events(tmp_path, 1) if e.get("cat") == "python_function"]
    assert any(e["tid"] == main for e in py)  # the user's own frames are traced: the tracer was on
    ours = [e for e in py if e["tid"] != main]
    # what the tracer finds open on the writer when the window starts stays (a few frames), and what the
    # writer ran up to its next unhooking (one step of the publish); no import, nothing of TensorBoard
    assert len(ours) <= 200, sorted({e["name"] for e in ours})[:40]
    assert not [e for e in ours if "importlib" in e["name"] or "tensorboard" in e["name"]]
