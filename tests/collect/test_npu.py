"""Collection on NPU, driven through ps.Profile / @ps.profile / ps.start-stop against a FAKE torch_npu.

The real torch_npu needs Ascend hardware and the CANN toolkit, absent here; tests/npu_double/torch_npu
behaves as torch_npu's profiler does, per version (the 2.1 branches and the current 26.x), written from
a reading of its source (see its docstring). Its analysed output is copied from the real recording in
tests/fixtures/ascend/level1, so the numbers checked here come from an independent json/csv
reading of those files.
"""
import csv
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from canning import profiling_suite as ps  # noqa: E402
from canning_tb.collect import NpuUnavailableError  # noqa: E402
from canning_tb.collect import npu as collect_npu  # noqa: E402
from canning_tb.ingest.table import InputError  # noqa: E402
from canning_tb.store import Store  # noqa: E402

from _procs import communicate_all  # noqa: E402
from conftest import fixture_path  # noqa: E402

DOUBLE = Path(__file__).resolve().parents[1] / "npu_double"
NPU = [ps.ProfilerActivity.CPU, ps.ProfilerActivity.NPU]
OUT = "ASCEND_PROFILER_OUTPUT"


def _drop_double():
    for name in [m for m in sys.modules if m == "torch_npu" or m.startswith("torch_npu.")]:
        del sys.modules[name]


def use_double(monkeypatch, version="current", devices="1", parse_s="0.2"):
    """Put the fake torch_npu on sys.path, as `version`; the real fixtures feed its analysis."""
    monkeypatch.setenv("NPU_DOUBLE_VERSION", version)
    monkeypatch.setenv("NPU_DOUBLE_FIXTURE", str(fixture_path("ascend", "level1")))
    monkeypatch.setenv("NPU_DOUBLE_DEVICES", devices)
    monkeypatch.setenv("NPU_DOUBLE_PARSE_S", parse_s)
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.syspath_prepend(str(DOUBLE))
    monkeypatch.setattr(collect_npu, "_owner", None)
    _drop_double()


@pytest.fixture(autouse=True)
def no_double_left():
    yield
    _drop_double()  # later tests must not find the fake torch_npu imported


@pytest.fixture(params=["2.1", "current"])
def version(request, monkeypatch):
    use_double(monkeypatch, request.param)
    return request.param


def work(steps, prof=None):
    net = torch.nn.Linear(8, 4)
    for _ in range(steps):
        net(torch.randn(4, 8)).sum()
        if prof is not None:
            prof.step()


def manifests(run):
    return [json.loads((run / n).read_text()) for n in sorted(os.listdir(run)) if n.endswith(".canning.json")]


def fixture_output(rank=0):
    return fixture_path("ascend", "level1", f"rank{rank}_ascend_pt", OUT)


# --- the double is torch_npu as its source reads -------------------------------------------------------
def test_double_has_torch_npus_shape(version):
    import inspect

    import torch_npu.profiler as tp
    params = inspect.signature(tp.profile.__init__).parameters
    assert all(p.kind is p.KEYWORD_ONLY for n, p in params.items() if n != "self")
    assert ("execution_trace_observer" in params) == (version == "current")
    assert not hasattr(tp.profile, "key_averages") and not hasattr(tp.profile, "events")
    assert tp.ProfilerAction is not torch.profiler.ProfilerAction
    assert ("skip_first_wait" in inspect.signature(tp.schedule).parameters) == (version == "current")
    assert ("async_mode" in inspect.signature(tp.tensorboard_trace_handler).parameters) == (version == "current")


# --- windows, manifests, folders -------------------------------------------------------------------------
def test_each_manifest_names_its_window_folder(tmp_path, version, capsys):
    run = tmp_path / "run"
    with ps.Profile(activities=NPU, schedule=ps.schedule(wait=1, warmup=1, active=2, repeat=2),
                    on_trace_ready=ps.tensorboard_trace_handler(str(run))) as prof:
        work(10, prof)
    mans = manifests(run)
    assert [m["steps"] for m in mans] == [[2, 3], [6, 7]]
    folders = [m["files"][0]["name"] for m in mans]
    assert len(set(folders)) == 2 and all(m["kind"] == "ascend_pt" and m["analysis"] == "sync" for m in mans)
    for name in folders:
        folder = run / name
        assert name.startswith(mans[0]["worker"] + "_") and name.endswith("_ascend_pt")
        after_worker = name[len(mans[0]["worker"]) + 1:].split("_")
        assert after_worker[:-3] == ([str(os.getpid())] if version == "current" else [])  # the pid: 26.x only
        assert len(after_worker[-3]) == 17 and after_worker[-3].isdigit()  # %Y%m%d%H%M%S + ms
        assert (folder / "FRAMEWORK").is_dir() and [d for d in os.listdir(folder) if d.startswith("PROF_")]
        info = json.loads((folder / "profiler_info.json").read_text())
        assert info["config"]["common_config"]["schedule"]["active"] == 2  # our schedule, as plain numbers
        assert sorted(os.listdir(folder / OUT)) == sorted(os.listdir(fixture_output()) +
                                                          (["analyse.done"] if version == "current" else []))
    assert "Incorrect schedule" not in capsys.readouterr().out
    store = Store(str(tmp_path))
    (run_name,) = store.runs()
    (worker,) = store.workers(run_name)
    wins = store.windows(run_name, worker.name)
    assert [(w.format, w.status, w.steps) for w in wins] == [("canning", "ready", (2, 3)), ("canning", "ready", (6, 7))]


def test_skip_first_wait_and_a_torch_schedule_reach_torch_npu(tmp_path, version):
    # torch_npu keys its actions by its own enum, and the 2.1 branches have no skip_first_wait
    with ps.Profile(activities=NPU, schedule=ps.schedule(wait=2, warmup=1, active=1, repeat=1, skip_first_wait=1),
                    on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path / "a"))) as prof:
        work(6, prof)
    assert [m["steps"] for m in manifests(tmp_path / "a")] == [[1]]
    with ps.Profile(activities=NPU, schedule=torch.profiler.schedule(wait=1, warmup=1, active=1, repeat=2),
                    on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path / "b"))) as prof:
        work(8, prof)
    assert [m["steps"] for m in manifests(tmp_path / "b")] == [[2], [5]]
    assert all((tmp_path / "b" / m["files"][0]["name"] / OUT / "kernel_details.csv").is_file()
               for m in manifests(tmp_path / "b"))


def test_decorator_and_module_start_stop(tmp_path, version, capsys):
    @ps.profile(activities=NPU, on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path / "d")))
    def train_step():
        work(1)
    train_step()
    train_step()
    assert [m["steps"] for m in manifests(tmp_path / "d")] == [[0], [0]]
    prof = ps.start(activities=NPU, on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path / "s")))
    work(2, prof)
    assert ps.stop() is prof and len(manifests(tmp_path / "s")) == 1
    # no schedule: torch_npu warns "Incorrect schedule" at every stop(), about nothing the user did
    assert "Incorrect schedule" not in capsys.readouterr().out


def test_raw_torch_npu_profile_with_our_handler(tmp_path, version):
    import torch_npu.profiler as tp
    handler = ps.tensorboard_trace_handler(str(tmp_path))  # points torch_npu's process-wide output here
    with tp.profile(activities=[tp.ProfilerActivity.CPU, tp.ProfilerActivity.NPU], on_trace_ready=handler,
                    schedule=tp.schedule(wait=1, warmup=1, active=1, repeat=1)) as prof:
        work(4, prof)
    (man,) = manifests(tmp_path)
    assert man["steps"] == [2] and man["analysis"] == "sync"
    assert [d for d in os.listdir(tmp_path) if d.endswith("_ascend_pt")] == [man["files"][0]["name"]]
    assert (tmp_path / man["files"][0]["name"] / OUT / "trace_view.json").is_file()


# --- results on the NPU path: what torch_npu's handler wrote, read by canning_tb.ingest -------------
def _cpu_ops_of_trace_view(path):
    """Independent reading: cpu_op events of the Python process in trace_view.json, by name."""
    events = json.loads(Path(path).read_text())
    python = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
              and e["args"]["name"] == "Python"}
    calls, total_us = Counter(), Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e["pid"] in python:
            calls[e["name"]] += 1
            total_us[e["name"]] += float(e["dur"])
    return calls, total_us


def test_key_averages_table_and_every_summary(tmp_path, version):
    with ps.Profile(activities=NPU, schedule=ps.schedule(wait=0, warmup=1, active=2, repeat=1),
                    on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path))) as prof:
        work(4, prof)
    calls, total_us = _cpu_ops_of_trace_view(fixture_output() / "trace_view.json")
    averages = {a.key: a for a in prof.key_averages()}
    for name, n in calls.most_common(5):
        assert averages[name].count == n, name
    assert averages["aten::copy_"].cpu_time_total == pytest.approx(total_us["aten::copy_"], abs=0.01)
    by_shape = Counter()
    for e in json.loads((fixture_output() / "trace_view.json").read_text()):
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e["name"] == "aten::copy_":
            by_shape[str(e["args"].get("Input Dims"))] += 1
    shaped = [a for a in prof.key_averages(group_by_input_shape=True) if a.key == "aten::copy_"]
    assert sorted(a.count for a in shaped) == sorted(by_shape.values()) and len(shaped) > 1
    table = prof.key_averages().table(sort_by="self_npu_time_total", row_limit=5)
    assert "Self NPU" in table and "# of Calls" in table and len(table.splitlines()) == 5 + 6
    ops = {r[0]: r for r in prof.op_summary().rows}
    assert ops["aten::copy_"][1] == calls["aten::copy_"]
    # communication: the collectives of communication.json's step (its "Total Op Info" is a sum, not a call)
    comm = json.loads((fixture_output() / "communication.json").read_text())
    collectives = [k for step in comm.values() for k in step["collective"] if k != "Total Op Info"]
    summary = prof.communication_summary()
    assert sum(r[summary.columns.index("Calls")] for r in summary.rows) == len(collectives) > 0
    with open(fixture_output() / "memory_record.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) > 0 and prof.memory_summary().rows
    assert str(prof.optimization_suggestions())
    events = prof.events()  # the window's columnar events
    assert len(events.events["ts"]) > sum(calls.values())


def test_export_chrome_trace_writes_a_bare_array_we_read(tmp_path, version):
    from canning_tb.ingest.chrome_array import read_chrome_trace
    with ps.Profile(activities=NPU, on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path / "run"))) as prof:
        work(2)
    out = tmp_path / "npu.pt.trace.json"
    prof.export_chrome_trace(str(out))
    raw = json.loads(out.read_text())
    assert isinstance(raw, list) and isinstance(next(e["ts"] for e in raw if e.get("ph") == "X"), str)
    table = read_chrome_trace(str(out))
    calls, _ = _cpu_ops_of_trace_view(out)
    assert len(table.events["ts"]) >= sum(calls.values()) > 0
    store = Store(str(tmp_path), recursive=False)
    (run,) = store.runs()
    (worker,) = store.workers(run)
    digest = store.digest(run, worker.name, store.windows(run, worker.name)[0].id)
    assert {o.name: o.calls for o in digest.ops_by_name}["aten::copy_"] == calls["aten::copy_"]


# --- asynchronous and offline analysis -------------------------------------------------------------------
def test_async_window_goes_from_analysing_to_ready(tmp_path, monkeypatch):
    use_double(monkeypatch, "current", parse_s="0.5")
    gate = tmp_path / "analysis-may-start"  # the double's analysis waits for it (tests/npu_double)
    monkeypatch.setenv("NPU_DOUBLE_GATE", str(gate))
    run = tmp_path / "run"
    with ps.Profile(activities=NPU, on_trace_ready=ps.tensorboard_trace_handler(str(run), async_mode=True)) as prof:
        work(2)
    # training did not wait for the analysis: it returned before the analysis could even start
    assert not list(run.rglob("analyse.done")) and not list(run.rglob("trace_view.json"))
    gate.touch()
    (man,) = manifests(run)
    assert man["analysis"] == "async"
    store = Store(str(tmp_path))
    (run_name,) = store.runs()
    (worker,) = store.workers(run_name)
    (win,) = store.windows(run_name, worker.name)
    assert win.status == "analysing"
    with pytest.raises(InputError, match="still analysing"):
        store.digest(run_name, worker.name, win.id)
    folder_out = run / man["files"][0]["name"] / OUT
    deadline = time.monotonic() + 120
    while not (folder_out / "analyse.done").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    store.refresh()  # what the plugin does on /runs: no restart
    (win,) = store.windows(run_name, worker.name)
    assert win.status == "ready"
    calls, _ = _cpu_ops_of_trace_view(fixture_output() / "trace_view.json")
    digest = store.digest(run_name, worker.name, win.id)
    assert {o.name: o.calls for o in digest.ops_by_name}["aten::copy_"] == calls["aten::copy_"]


def test_digest_at_the_source_for_npu_windows(tmp_path, monkeypatch):
    use_double(monkeypatch, "current")
    handler = ps.tensorboard_trace_handler(str(tmp_path), digest=True)
    with ps.Profile(activities=NPU, on_trace_ready=handler):
        work(1)
    assert len(handler._children) == 1 and handler._children[0].wait(timeout=120) == 0
    (man,) = manifests(tmp_path)
    from canning_tb.analysis import digest_pb2
    from canning_tb.util.manifest import digest_path
    digest = digest_pb2.Digest.FromString(Path(digest_path(str(tmp_path / man["manifest"]))).read_bytes())
    calls, _ = _cpu_ops_of_trace_view(fixture_output() / "trace_view.json")
    assert {o.name: o.calls for o in digest.ops_by_name}["aten::copy_"] == calls["aten::copy_"]
    async_handler = ps.tensorboard_trace_handler(str(tmp_path / "async"), digest=True, async_mode=True)
    with ps.Profile(activities=NPU, on_trace_ready=async_handler):
        work(1)
    assert async_handler._children == []  # torch_npu is still writing: the viewer digests it when it is done


def test_async_on_2_1_says_it_is_not_offered(tmp_path, monkeypatch, caplog):
    use_double(monkeypatch, "2.1")
    with ps.Profile(activities=NPU, on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path), async_mode=True)):
        work(1)
    assert "no async_mode" in caplog.text
    assert [m["analysis"] for m in manifests(tmp_path)] == ["sync"]


def test_offline_analysis(tmp_path, monkeypatch, version):
    from canning_tb.util import manifest
    with ps.Profile(activities=NPU, on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path), analyse_flag=False)
                    ) as prof:
        work(1)
    (man,) = manifests(tmp_path)
    assert man["analysis"] == "off" and not (tmp_path / man["files"][0]["name"] / OUT).exists()
    store = Store(str(tmp_path))
    (worker,) = store.workers(".")
    (win,) = store.windows(".", worker.name)
    assert win.status == "incomplete"
    with pytest.raises(InputError, match="raw data only"):
        store.digest(".", worker.name, win.id)
    with pytest.raises(RuntimeError, match="analyse"):
        prof.key_averages()
    prof.analyse()  # torch_npu's offline analysis, blocking
    assert prof.key_averages()
    store.refresh()
    (win,) = store.windows(".", worker.name)
    # 26.x marks the end of its analysis; 2.1 does not, so its output counts once it stopped changing
    assert win.status == ("ready" if version == "current" else "analysing")
    monkeypatch.setattr(manifest, "ASCEND_QUIET_NS", 0)
    store.refresh()
    (win,) = store.windows(".", worker.name)
    assert win.status == "ready"
    calls, _ = _cpu_ops_of_trace_view(fixture_output() / "trace_view.json")
    digest = store.digest(".", worker.name, win.id)  # not the error remembered while it was unparsed
    assert {o.name: o.calls for o in digest.ops_by_name}["aten::copy_"] == calls["aten::copy_"]


def test_skipped_analysis_is_reported_as_such(tmp_path, monkeypatch):
    use_double(monkeypatch, "current")
    # torch_npu refuses to parse inside a daemon process (it only prints); fake being one
    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True)
    with ps.Profile(activities=NPU, on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path))):
        work(1)
    (man,) = manifests(tmp_path)
    assert man["analysis"] == "skipped"
    store = Store(str(tmp_path))
    (worker,) = store.workers(".")
    (win,) = store.windows(".", worker.name)
    assert win.status == "incomplete"
    with pytest.raises(InputError, match="torch_npu.profiler.profiler.analyse"):
        store.digest(".", worker.name, win.id)


def test_failed_analysis_is_printed_by_torch_npu_and_reported_by_us(tmp_path, monkeypatch, capsys):
    use_double(monkeypatch, "current")
    monkeypatch.setenv("NPU_DOUBLE_FIXTURE", str(tmp_path / "nothing-here"))  # its analysis raises inside
    with ps.Profile(activities=NPU, on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path / "run"))) as prof:
        work(1)
    assert "Profiling data parsing failed" in capsys.readouterr().out  # torch_npu prints, never raises
    (man,) = manifests(tmp_path / "run")
    assert man["analysis"] == "skipped"
    with pytest.raises(RuntimeError, match="raw data only"):
        prof.op_summary()


# --- what torch_npu would do silently, said aloud ----------------------------------------------------
def test_missing_device_goes_through_our_help(monkeypatch, version):
    use_double(monkeypatch, version, devices="0")
    with pytest.raises(NpuUnavailableError, match="set_env.sh"):
        ps.Profile(activities=NPU)
    with pytest.warns(RuntimeWarning, match="CPU only"):
        prof = ps.Profile(activities=NPU, start_on_cpu=True)
    assert prof.backend == "torch" and prof.activities == [ps.ProfilerActivity.CPU]


def test_device_lost_before_start_goes_through_our_help(monkeypatch, tmp_path):
    use_double(monkeypatch, "current")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the private folder would go
    strict, lenient = ps.Profile(activities=NPU), ps.Profile(activities=NPU, start_on_cpu=True)
    monkeypatch.setenv("NPU_DOUBLE_DEVICES", "0")  # torch_npu checks again when it builds its profile
    with pytest.raises(NpuUnavailableError, match="set_env.sh"):
        strict.start()
    with pytest.warns(RuntimeWarning, match="CPU only"):
        with lenient:
            work(1)
    assert lenient.backend == "torch" and "aten::addmm" in {e.key for e in lenient.key_averages()}
    left = [name for name in os.listdir(tmp_path) if name.startswith("canning-npu-")]
    assert left == []  # no empty folder left for a torch_npu that never wrote


def test_settings_torch_npu_would_reset(tmp_path, version):
    with pytest.warns(RuntimeWarning, match="record_shapes=1 is not a bool"):
        prof = ps.Profile(activities=NPU, record_shapes=1, on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path)))
    assert prof._backend.kwargs["record_shapes"] is True
    with pytest.warns(RuntimeWarning, match="_ExperimentalConfig"):
        prof = ps.Profile(activities=NPU, experimental_config=torch._C._profiler._ExperimentalConfig())
    assert "experimental_config" not in prof._backend.kwargs


def test_second_handler_in_one_process_is_refused(tmp_path, version):
    first = ps.Profile(activities=NPU, on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path / "one")))
    second = ps.Profile(activities=NPU, on_trace_ready=ps.tensorboard_trace_handler(str(tmp_path / "two")))
    first.start()
    try:
        with pytest.raises(RuntimeError, match="one folder"):
            second.start()
    finally:
        first.stop()
    with second:  # once the first has stopped, the second writes into its own folder
        work(1)
    assert len(manifests(tmp_path / "one")) == 1 and len(manifests(tmp_path / "two")) == 1


def test_profile_without_handler_leaves_nothing_in_the_working_directory(tmp_path, monkeypatch, version):
    monkeypatch.chdir(tmp_path)
    temp = tmp_path.parent / f"{tmp_path.name}-temp"  # where the data goes instead: not /tmp, not the cwd
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with ps.Profile(activities=NPU) as prof:
        work(2)
    assert os.listdir(tmp_path) == []
    calls, _ = _cpu_ops_of_trace_view(fixture_output() / "trace_view.json")
    assert {a.key: a.count for a in prof.key_averages()}["aten::copy_"] == calls["aten::copy_"]
    seen = []  # a callback of the user's own: torch_npu's data is still written and analysed, elsewhere
    with ps.Profile(activities=NPU, on_trace_ready=lambda p: seen.append(len(p.key_averages()))):
        work(2)
    assert os.listdir(tmp_path) == [] and seen == [len(prof.key_averages())]
    assert len([p for p in temp.iterdir() if p.name.startswith("canning-npu-")]) == 2  # one folder a profile


# --- a real 2-process torch.distributed (gloo) run sharing one log folder ------------------------------
def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_two_ranks(logdir, steps=7):
    world, port = 2, _free_port()
    env = {**os.environ, "WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
           "NPU_DOUBLE_VERSION": "current", "NPU_DOUBLE_FIXTURE": str(fixture_path("ascend", "level1")),
           "NPU_DOUBLE_PARSE_S": "0.4", "NPU_DOUBLE_DEVICES": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(DOUBLE), os.environ.get("PYTHONPATH")) if p)}
    procs = [subprocess.Popen([sys.executable, str(DOUBLE / "train_npu.py"), str(logdir), str(steps)],
                              env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(world)]
    outs = communicate_all(procs, 180)  # a hung rank is killed on every path
    assert [p.returncode for p in procs] == [0, 0], outs


@pytest.mark.slow
@pytest.mark.parametrize("attempt", range(3))  # the race it guards against depends on timing
def test_two_ranks_each_manifest_names_its_own_folder(tmp_path, attempt):
    logdir = tmp_path / "log"
    _run_two_ranks(logdir)
    mans = manifests(logdir)
    assert sorted(Counter(m["rank"] for m in mans).items()) == [(0, 3), (1, 3)]
    claimed = [m["files"][0]["name"] for m in mans]
    assert len(set(claimed)) == 6
    for m in mans:
        folder = logdir / m["files"][0]["name"]
        info = json.loads((folder / f"profiler_info_{m['rank']}.json").read_text())  # torch_npu's own record
        assert info["rank_id"] == m["rank"] and str(m["pid"]) in folder.name
        assert folder.name.startswith(m["worker"] + "_")
    folders = [d for d in os.listdir(logdir) if d.endswith("_ascend_pt")]
    assert sorted(folders) == sorted(claimed)  # no folder left unclaimed
    store = Store(str(tmp_path))
    (run,) = store.runs()
    workers = store.workers(run)
    assert [w.rank for w in workers] == [0, 1]
    for w in workers:
        wins = store.windows(run, w.name)
        assert len(wins) == 3 and {x.format for x in wins} == {"canning"} and {x.status for x in wins} == {"ready"}


def test_async_window_through_the_plugin_routes(tmp_path, monkeypatch):
    """The same, as the browser sees it: /runs says "analysing", then "ready", from one running plugin."""
    from tensorboard.backend import application
    from werkzeug.test import Client

    from test_plugin_routes import get, make_plugin
    use_double(monkeypatch, "current", parse_s="3")
    run = tmp_path / "run"
    with ps.Profile(activities=NPU, on_trace_ready=ps.tensorboard_trace_handler(str(run), async_mode=True)):
        work(1)
    client = Client(application.TensorBoardWSGI([make_plugin(tmp_path)]))

    def window():
        code, body = get(client, "runs")
        assert code == 200
        (worker,) = body["runs"][0]["workers"]
        return worker["name"], worker["windows"][0]

    worker, win = window()
    assert win["status"] == "analysing"
    code, body = get(client, "overview", run="run", worker=worker, window=win["id"])
    assert code != 200 and "still analysing" in json.dumps(body)
    deadline = time.monotonic() + 120
    while win["status"] != "ready" and time.monotonic() < deadline:
        time.sleep(0.3)
        worker, win = window()
    assert win["status"] == "ready"
    code, body = get(client, "overview", run="run", worker=worker, window=win["id"])
    assert code == 200, body
