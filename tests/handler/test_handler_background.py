"""The handler's work after the export runs off the training thread: gzip, the manifest (last),
scalars and the digest start; Profile.stop() and interpreter exit wait for it."""
import glob
import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest

torch = pytest.importorskip("torch")
from canning import profiling_suite as ps  # noqa: E402
from canning_tb.handler import files  # noqa: E402

NET = torch.nn.Linear(32, 8)


def test_gzip_and_manifest_run_off_the_training_thread_and_stop_waits(tmp_path, monkeypatch):
    seen = []
    real_gzip, real_json = files.publish_gzip, files.publish_json

    def gzip_on(src, dst, *a, **kw):
        seen.append(("gzip", threading.current_thread().name, os.path.basename(dst)))
        return real_gzip(src, dst, *a, **kw)

    def json_on(obj, dst):
        seen.append(("manifest", threading.current_thread().name, os.path.basename(dst)))
        return real_json(obj, dst)

    monkeypatch.setattr(files, "publish_gzip", gzip_on)
    monkeypatch.setattr(files, "publish_json", json_on)
    training = threading.current_thread().name
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.schedule(wait=0, warmup=1, active=1, repeat=2),
                    on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path), digest=False)) as prof:
        for _ in range(4):
            NET(torch.randn(4, 32)).sum().backward()
            prof.step()
    # stop() returned: every window is complete, each trace published before its manifest
    mans = sorted(glob.glob(str(tmp_path / "*.canning.json")))
    assert len(mans) == 2
    for m in mans:
        trace = m.replace(".canning.json", ".pt.trace.json.gz")
        assert os.path.getsize(trace) == json.load(open(m))["files"][0]["bytes"]
    assert [k for k, _, _ in seen] == ["gzip", "manifest", "gzip", "manifest"]
    assert all(thread != training for _, thread, _ in seen)
    assert not glob.glob(str(tmp_path / ".*.tmp"))
    # the profile's summaries read the window just published
    assert prof.op_summary().rows


def test_interpreter_exit_writes_the_last_window(tmp_path):
    """A raw torch.profiler.profile never calls the handler's flush: exit still waits for the writes."""
    script = textwrap.dedent(f"""
        import torch
        from canning import profiling_suite as ps
        h = ps.tensorboard_trace_handler({str(tmp_path)!r}, digest=False)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], on_trace_ready=h) as prof:
            torch.nn.Linear(32, 8)(torch.randn(4, 32)).sum().backward()
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    (man,) = glob.glob(str(tmp_path / "*.canning.json"))
    assert os.path.exists(man.replace(".canning.json", ".pt.trace.json.gz"))
