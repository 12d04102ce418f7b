"""Hostile or unlucky logdirs (issue 14, items 2, 3, 10, 11): a deeply nested manifest, FIFOs named
like traces, symbolic links into and out of the logdir, and the handler's temporary files on failed
windows and after a killed rank. Each case failed before its fix (RecursionError out of discovery:
plugin disabled; a FIFO: discovery blocked forever; links out of the logdir followed; .tmp files left
and a FileNotFoundError instead of the OS error)."""
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest

from canning_tb.store import Store, discover
from conftest import fixture_path
from test_plugin_routes import fetch_json, start_tensorboard, stop_tensorboard

NESTED = "[" * 200_000 + "]" * 200_000


def copy_resnet(dst: Path, count: int = 1) -> Path:
    """`count` traces of the resnet50_v100 Kineto fixture in the run folder dst."""
    dst.mkdir(parents=True)
    for f in sorted(fixture_path("kineto", "resnet50_v100").iterdir())[:count]:
        shutil.copy(f, dst / f.name)
    return dst


def windows_of(logdir) -> set[tuple[str, str]]:
    """{(run, window file name)} discovery finds."""
    return {(name, os.path.basename(w.path)) for name, run in discover(str(logdir)).items()
            for wk in run.workers.values() for w in wk.windows}


# -- item 2: nesting past any depth is that window's error -------------------------------------------
def test_deeply_nested_manifest_is_one_windows_error_not_the_viewers(tmp_path):
    copy_resnet(tmp_path / "good")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "w.1.canning.json").write_text(NESTED)
    store = Store(str(tmp_path))  # raised RecursionError before
    assert store.runs() == ["bad", "good"]
    from canning_tb.ingest.table import InputError
    (worker,) = store.workers("bad")
    (window,) = store.windows("bad", worker.name)
    with pytest.raises(InputError, match="nested too deeply"):
        store.digest("bad", worker.name, window.id)


def test_deeply_nested_torch_npu_info_gives_no_rank_and_no_crash(tmp_path):
    run = tmp_path / "npu"
    shutil.copytree(fixture_path("ascend", "level0"), run)
    for info in run.rglob("profiler_info*.json"):
        info.write_text(NESTED)
    assert {name for name, _ in windows_of(tmp_path)} == {"npu"}


# -- item 3: only regular files are opened ----------------------------------------------------------
def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def test_fifos_named_like_traces_never_block_discovery(tmp_path):
    copy_resnet(tmp_path / "good")
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    _fifo(hostile / "worker0.1.pt.trace.json")  # blocked discovery forever before
    _fifo(hostile / "rank-1.json")
    _fifo(hostile / "w.2.canning.json")
    # a manifest naming a FIFO: its window is not listed (the reader would block on it)
    _fifo(hostile / "w.3.pt.trace.json.gz")
    (hostile / "w.3.canning.json").write_text('{"worker": "w", "window": 3, "files": [{"name": "w.3.pt.trace.json.gz"}]}')
    # a torch_npu folder holding a FIFO where the reader opens a file by name
    npu = hostile / "npu"
    shutil.copytree(fixture_path("ascend", "level0"), npu)
    for output in npu.rglob("ASCEND_PROFILER_OUTPUT"):
        (output / "kernel_details.csv").unlink()
        _fifo(output / "kernel_details.csv")
    done = subprocess.run([sys.executable, "-c", f"from canning_tb.store import discover; print(sorted(discover({str(tmp_path)!r})))"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "['good']", done.stderr


@pytest.mark.slow
def test_tensorboard_survives_nesting_and_fifos_and_keeps_listing(tmp_path, tmp_path_factory):
    logdir = tmp_path / "logdir"
    copy_resnet(logdir / "good")
    (logdir / "bad").mkdir()
    (logdir / "bad" / "w.1.canning.json").write_text(NESTED)
    _fifo(logdir / "bad" / "worker0.1.pt.trace.json")
    proc, url, log = start_tensorboard(logdir, tmp_path_factory.mktemp("tb") / "tb.log")
    try:
        assert fetch_json(url + "/data/plugins_listing")["canning"]["enabled"] is True
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url + "/data/plugin/canning/runs", timeout=5) as r:  # hung forever before
            import json
            runs = json.load(r)
        assert runs["error"] is None and {r["name"] for r in runs["runs"]} == {"good", "bad"}
        # added while TensorBoard runs: another nested manifest, and a new run that must still appear
        (logdir / "later").mkdir()
        (logdir / "later" / "x.1.canning.json").write_text(NESTED)
        copy_resnet(logdir / "new")
        import time
        deadline = time.monotonic() + 180
        while {"new", "later"} - {r["name"] for r in fetch_json(url + "/data/plugin/canning/runs")["runs"]}:
            assert time.monotonic() < deadline, "the listing froze"
            time.sleep(1)
    finally:
        stop_tensorboard(proc, log)


# -- item 10: one policy for symbolic links ---------------------------------------------------------
@pytest.fixture
def linked(tmp_path):
    """A logdir with links inside it, and links out of it (outside/)."""
    logdir, outside = tmp_path / "logdir", tmp_path / "outside"
    copy_resnet(logdir / "store" / "real")
    (logdir / "linked_in").symlink_to(logdir / "store" / "real")  # a run linked from inside the logdir
    copy_resnet(outside / "theirs")
    (logdir / "linked_out").symlink_to(outside / "theirs")  # a run linked from outside
    (logdir / "files").mkdir()
    trace = sorted((outside / "theirs").iterdir())[0]
    (logdir / "files" / "worker9.1.pt.trace.json.gz").symlink_to(trace)  # a trace file linked from outside
    (logdir / "files" / "w.1.pt.trace.json.gz").symlink_to(trace)  # named by a manifest
    (logdir / "files" / "w.1.canning.json").write_text('{"worker": "w", "window": 1, "files": [{"name": "w.1.pt.trace.json.gz"}]}')
    npu = logdir / "npu"
    shutil.copytree(fixture_path("ascend", "level0"), npu)
    secret = outside / "secret.csv"
    secret.write_text("Name,Value\nsecret,1\n")
    for output in npu.rglob("ASCEND_PROFILER_OUTPUT"):  # torch_npu folders with a file linked from outside
        (output / "kernel_details.csv").unlink()
        (output / "kernel_details.csv").symlink_to(secret)
    (logdir / "loop").symlink_to(logdir)  # a link loop
    return logdir


def test_links_inside_the_logdir_are_followed_links_out_are_not(linked, monkeypatch):
    monkeypatch.delenv("CANNING_FOLLOW_LINKS", raising=False)
    found = windows_of(linked)
    runs = {run for run, _ in found}
    assert "linked_out" not in runs and "files" not in runs and "npu" not in runs
    assert len({run for run in runs if run in ("linked_in", "store/real")}) == 1  # one real folder, listed once
    monkeypatch.setenv("CANNING_FOLLOW_LINKS", "1")
    runs = {run for run, _ in windows_of(linked)}
    assert {"linked_out", "files", "npu"} <= runs
    assert {f for run, f in windows_of(linked) if run == "files"} == {"worker9.1.pt.trace.json.gz", "w.1.canning.json"}


def test_cli_follows_links_out_only_when_told(linked, tmp_path, monkeypatch):
    monkeypatch.delenv("CANNING_FOLLOW_LINKS", raising=False)
    for name in ("npu", "files", "store", "linked_in"):  # keep the links out of the logdir (and the loop)
        path = linked / name
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    base = [sys.executable, "-m", "canning_tb.cli.main", "--mode=view", f"--input={linked}"]
    env = {**os.environ, "CANNING_CACHE_DIR": str(tmp_path / "cache")}
    refused = subprocess.run(base, capture_output=True, text=True, timeout=300, env=env)
    assert refused.returncode == 2 and "no profiles found" in refused.stderr
    assert "skipped linked_out: a link to outside the logdir" in refused.stderr  # relative to the logdir
    followed = subprocess.run(base + ["--follow-links"], capture_output=True, text=True, timeout=300, env=env)
    assert followed.returncode == 0 and "=== linked_out / " in followed.stdout, followed.stderr


# -- item 11: the handler's temporary files --------------------------------------------------------
WINDOW = textwrap.dedent("""
    import resource, sys, torch
    from canning import profiling_suite as ps
    if sys.argv[2] != "-":
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), int(sys.argv[2])))
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.schedule(wait=0, warmup=1, active=1, repeat=1),
                    on_trace_ready=ps.tensorboard_trace_handler(sys.argv[1], worker_name="w", digest=False)) as prof:
        for _ in range(3):
            x = torch.randn(64, 64)
            (x @ x).sum()
            prof.step()
    print("training went on")
""")


def _one_window(tmp_path, run, limit="-", wrap=()):
    script = tmp_path / "window.py"
    script.write_text(WINDOW)
    return subprocess.run([*wrap, sys.executable, str(script), str(run), str(limit)], capture_output=True, text=True,
                          timeout=300)


def test_a_window_too_large_leaves_no_temp_and_names_the_os_error(tmp_path):
    pytest.importorskip("torch")
    run = tmp_path / "run"
    done = _one_window(tmp_path, run, limit=3000)  # the trace is bigger: the file system says EFBIG
    assert done.returncode == 0 and "training went on" in done.stdout, done.stderr
    said = [line for line in done.stderr.splitlines() if "could not write profiler window" in line]
    assert said and "File too large" in said[0], done.stderr
    assert not [n for n in os.listdir(run) if n.endswith(".tmp") or n.startswith(".")]
    assert not [n for n in os.listdir(run) if n.endswith((".canning.json", ".pt.trace.json.gz"))]  # no cut window


def test_a_read_only_file_system_is_named_as_such(tmp_path):
    pytest.importorskip("torch")
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot make a mount namespace here (a read-only file system needs one)")
    run = tmp_path / "ro"
    run.mkdir()
    script = tmp_path / "window.py"
    script.write_text(WINDOW)
    done = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o ro tmpfs {run} && "
                           f"exec {sys.executable} {script} {run} -"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "training went on" in done.stdout, done.stderr
    said = [line for line in done.stderr.splitlines() if "could not write profiler window" in line]
    assert said and "Read-only file system" in said[0] and "FileNotFoundError" not in said[0], done.stderr


def test_stale_temps_of_a_killed_rank_are_removed_at_the_next_start(tmp_path):
    pytest.importorskip("torch")
    run = tmp_path / "run"
    run.mkdir()
    host = socket.gethostname()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid is free now: what a rank killed mid-write leaves behind
    stale = run / f".w.1.pt.trace.json.gz.{host}.{dead.pid}.tmp"
    stale.write_bytes(b"\x1f\x8b half a window")
    other_host = run / f".w.1.pt.trace.json.gz.otherhost.{dead.pid}.tmp"  # another machine's: not ours to judge
    other_host.write_bytes(b"x")
    alive = run / f".w.2.canning.json.{host}.{os.getpid()}.tmp"  # a process still writing
    alive.write_bytes(b"x")
    done = _one_window(tmp_path, run)
    assert done.returncode == 0, done.stderr
    assert not stale.exists() and other_host.exists() and alive.exists()
    assert len([n for n in os.listdir(run) if n.endswith(".canning.json")]) == 1


# -- issue 23: every open checked when it happens (safe_files) -----------------------------------------
MARK = "CANNING-OUTSIDE-MARKER"


def test_a_trace_swapped_for_a_link_is_refused_in_the_child_that_reads_it(tmp_path, monkeypatch):
    """Listed as a plain file, then swapped for a link to a readable trace outside the logdir: the child
    process that parses big windows checks the real path too (before: it read and digested it)."""
    monkeypatch.delenv("CANNING_FOLLOW_LINKS", raising=False)
    from canning_tb.ingest.table import InputError
    run = copy_resnet(tmp_path / "logdir" / "run")
    outside = copy_resnet(tmp_path / "outside")
    store = Store(str(tmp_path / "logdir"), cache_dir=str(tmp_path / "cache"), isolate_bytes=0)
    (worker,) = store.workers("run")
    (window,) = store.windows("run", worker.name)
    path = run / os.path.basename(window.path)
    path.unlink()
    path.symlink_to(next(outside.iterdir()))
    with pytest.raises(InputError, match="a link to outside the logdir"):
        store.digest("run", worker.name, window.id)


def test_a_linked_name_map_is_not_read_and_a_fifo_one_does_not_block(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "names.json").write_text(json.dumps({"operators": {"aten::mm": MARK}}))
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    (logdir / "canning_names.json").symlink_to(tmp_path / "outside" / "names.json")
    fifo = tmp_path / "fifo_logdir"
    fifo.mkdir()
    os.mkfifo(fifo / "canning_names.json")
    script = ("import sys; from canning_tb.store.name_map import load_name_map\n"
              "for folder in sys.argv[1:]:\n"
              "    names, path, problem = load_name_map(folder)\n"
              "    print(names.operator('aten::mm'), '|', problem)\n")
    done = subprocess.run([sys.executable, "-c", script, str(logdir), str(fifo)], capture_output=True, text=True,
                          timeout=60)
    linked, fifo_line = done.stdout.splitlines()
    assert linked.startswith("aten::mm |") and "outside the logdir" in linked and MARK not in linked
    assert fifo_line.startswith("aten::mm |") and "FIFO" in fifo_line


def test_name_map_patterns_are_linear_and_replacements_name_their_groups():
    import time
    from canning_tb.analysis.names import NameMapError, name_map
    with pytest.raises(NameMapError, match="names group 9"):
        name_map({"operator_patterns": [["^(a)$", "\\9"]]})  # before: accepted, then a 500 on /compare
    with pytest.raises(NameMapError, match="back-references"):
        name_map({"operator_patterns": [["^(a)\\1$", "x"]]})
    hostile = name_map({"operator_patterns": [["^(a+)+$", "x"]]})
    start = time.monotonic()
    assert hostile.operator("a" * 5000 + "!") == "a" * 5000 + "!" and hostile.operator("aaa") == "x"
    assert time.monotonic() - start < 60  # a hang guard: Python's re would take 2**5000 steps (forever)


def test_a_dead_ranks_exporter_temp_is_removed_at_the_next_start(tmp_path):
    from canning_tb.handler.files import remove_stale_temps
    host = socket.gethostname()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    kineto = tmp_path / f".w.1.pt.trace.json.{host}.{dead.pid}.tmp.tmp"  # torch's own temp beside ours
    kineto.write_bytes(b'{"traceEvents": [')
    assert remove_stale_temps(str(tmp_path)) == [kineto.name] and not kineto.exists()
