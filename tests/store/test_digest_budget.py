"""The digest at the source on a training node stays within its budget (store/digest_budget.py): nice 10,
one core (no second reader process, BLAS on one thread), and a memory budget past which the process stops
and leaves the window to the viewer. A real background process on a real torch_npu window (a copy of the
level1 fixture with a manifest naming it), its figures read from /proc and from os.walk, not from the code."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from canning_tb.store import digest_budget

from conftest import fixture_path


@pytest.fixture()
def window(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(fixture_path("ascend", "level1", "rank0_ascend_pt"), folder / "rank0_ascend_pt")
    manifest = {"kind": "ascend_pt", "worker": "rank0", "window": 0, "rank": 0, "world_size": 2,
                "manifest": "rank0.0.canning.json", "analysis": "sync",
                "files": [{"name": "rank0_ascend_pt", "kind": "ascend_pt"}]}
    path = folder / "rank0.0.canning.json"
    path.write_text(json.dumps(manifest))
    return path


def test_the_budget_is_the_window_s_size_plus_a_base(window):
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(window.parent / "rank0_ascend_pt")
               for f in fs)
    assert digest_budget.window_bytes(str(window)) == size
    assert digest_budget.budget([str(window)]) == (512 << 20) + int(1.5 * size)


def _run(window, **env):
    return subprocess.run([sys.executable, "-m", "canning_tb.store.source_digest", str(window)],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


def test_within_the_budget_the_digest_is_written_and_past_it_the_process_stops(window):
    digest = window.parent / "rank0.0.digest.pb"
    p = _run(window, CANNING_DIGEST_MAX_RSS=str(1 << 20))  # 1 MiB: passed at once
    assert p.returncode == 0 and "budget" in p.stderr and not digest.exists()
    p = _run(window)
    assert p.returncode == 0, p.stderr
    assert digest.exists() and digest.stat().st_size > 0
