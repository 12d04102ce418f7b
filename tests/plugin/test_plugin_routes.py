"""The TensorBoard plugin's routes, through werkzeug's test Client and TensorBoard's own router,
on real profiles (shared fixtures and a real torch.profiler run) read by the real Store.

Expected numbers come from an independent reading of the raw trace (json + a nesting loop),
never from the code under test.
"""
import collections
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from decimal import Decimal
from pathlib import Path

import pytest
from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from _raw_kineto import Trace, load_events
from conftest import fixture_path

from canning_tb.plugin.loader import CanningLoader
from canning_tb.util.logdir import normalize_logdir
from canning_tb.plugin.plugin import CanningPlugin

RESNET_WINDOW = "1623143089861"
HTA_WINDOW = "1669783687"


# -- independent reading of a Kineto trace ----------------------------------------------------------


def independent_host_self(path):
    """{op name: (calls, host self µs)} by nesting the host ranges of each thread (tests/_raw_kineto.py:
    a stack walk; record_function ranges and runtime calls are children that take self time away but
    are not operators; a redispatched call counts in its parent, as in torch's key_averages())."""
    return {name: (calls, Decimal(self_ns) / 1000) for name, (calls, self_ns) in Trace(path).op_self().items()}


# -- logdirs -----------------------------------------------------------------------------------------


def build_logdir(root: Path) -> Path:
    """resnet/ (2021 Kineto, two windows), hta/ (rank 1 of 2), broken/ (a truncated trace)."""
    resnet = root / "resnet"
    resnet.mkdir(parents=True)
    for f in sorted(fixture_path("kineto", "resnet50_v100").iterdir()):
        shutil.copy(f, resnet / f.name)
    hta = root / "hta"
    hta.mkdir()
    shutil.copy(fixture_path("hta", "df_index_resolver", "df_index_resolver.json.gz"),
                hta / f"rank1.{HTA_WINDOW}.pt.trace.json.gz")
    broken = root / "broken"
    broken.mkdir()
    good = (resnet / f"worker0.{RESNET_WINDOW}.pt.trace.json.gz").read_bytes()
    (broken / "worker0.1.pt.trace.json.gz").write_bytes(gzip.compress(gzip.decompress(good)[:5000]))
    return root


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return build_logdir(tmp_path_factory.mktemp("logdir"))


def make_plugin(logdir, **kw):
    kw.setdefault("refresh_interval", 0.0)
    p = CanningPlugin(base_plugin.TBContext(logdir=str(logdir)), **kw)
    assert p.scanner.wait_first(60)
    return p


@pytest.fixture(scope="module")
def plugin(logdir):
    return make_plugin(logdir)


@pytest.fixture(scope="module")
def client(plugin):
    return Client(application.TensorBoardWSGI([plugin]))


def get(client, route, **params):
    resp = client.get(f"/data/plugin/canning/{route}", query_string=params)
    assert resp.headers["Content-Type"].startswith("application/json"), resp.headers
    return resp.status_code, json.loads(resp.get_data())


def window_params(run, worker, window):
    return {"run": run, "worker": worker, "window": window}


# -- TensorBoard integration -------------------------------------------------------------------------


def test_listing_js_and_entry_through_tensorboard(client):
    listing = json.loads(client.get("/data/plugins_listing").get_data())
    entry = listing["canning"]
    assert entry["enabled"] is True
    assert entry["tab_name"] == "Canning Profiler"
    assert entry["loading_mechanism"] == {"type": "IFRAME", "module_path": "/data/plugin/canning/index.js"}
    js = client.get("/data/plugin/canning/index.js")
    assert js.status_code == 200 and js.mimetype == "text/javascript"
    assert js.headers["X-Content-Type-Options"] == "nosniff"
    assert b"render" in js.get_data()
    page = client.get("/data/plugin_entry.html?name=canning")
    assert b'<base href="plugin/canning/" />' in page.get_data()


def test_loader_builds_plugin(logdir):
    p = CanningLoader().load(base_plugin.TBContext(logdir=str(logdir)))
    assert isinstance(p, CanningPlugin) and p.plugin_name == "canning"
    assert p.scanner.wait_first(60) and p.is_active()


def test_apps_answer_directly(plugin):
    """The route apps work without TensorBoard's router too."""
    resp = Client(plugin.get_plugin_apps()["/runs"]).get("/runs")
    assert resp.status_code == 200
    assert {r["name"] for r in json.loads(resp.get_data())["runs"]} == {"resnet", "hta", "broken"}


def test_runs_lists_workers_and_windows(logdir):
    # a refresh interval of an hour: once the first scan has ended no request starts another, so nothing loads
    p = make_plugin(logdir, refresh_interval=3600.0)
    p.scanner.join(60)
    code, body = get(Client(application.TensorBoardWSGI([p])), "runs")
    assert code == 200 and body["loading"] is False and body["error"] is None
    runs = {r["name"]: r for r in body["runs"]}
    assert set(runs) == {"broken", "hta", "resnet"}
    (w,) = runs["resnet"]["workers"]
    assert w["name"] == "worker0"
    assert [x["id"] for x in w["windows"]] == ["1623143089861", "1623143566756"]
    assert all(x["format"] == "kineto" and x["status"] == "ready" for x in w["windows"])
    assert w["windows"][0]["files"] == [f"worker0.{RESNET_WINDOW}.pt.trace.json.gz"]  # names, not paths
    (h,) = runs["hta"]["workers"]
    assert h["name"] == "rank1" and h["rank"] == 1


# -- operators ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("run,worker,window,trace", [
    ("resnet", "worker0", RESNET_WINDOW, f"worker0.{RESNET_WINDOW}.pt.trace.json.gz"),
    ("hta", "rank1", HTA_WINDOW, f"rank1.{HTA_WINDOW}.pt.trace.json.gz"),
])
def test_operators_match_an_independent_reading(client, logdir, run, worker, window, trace):
    code, body = get(client, "operators", **window_params(run, worker, window), group_by="name")
    assert code == 200, body
    assert body["group_by"] == "name" and body["has_device"] is True  # both are GPU traces
    rows = sorted(body["rows"], key=lambda r: -r["host_self_ns"])
    truth = independent_host_self(logdir / run / trace)
    ranked = [n for n, _ in sorted(truth.items(), key=lambda kv: -kv[1][1]) if not n.startswith("ProfilerStep#")]
    for r in rows[:5]:
        assert isinstance(r["calls"], int) and isinstance(r["host_self_ns"], int)
        assert r["name"] in ranked[:10], (r["name"], ranked[:10])
        calls, self_us = truth[r["name"]]
        assert r["calls"] == calls
        assert r["host_self_ns"] == self_us * 1000
        assert r["host_total_ns"] >= r["host_self_ns"]
    # the heaviest host operators of the raw trace are the first rows
    assert [r["name"] for r in rows[:4]] == ranked[:4]


def test_operators_group_by_shape_and_stack(client):
    p = window_params("resnet", "worker0", RESNET_WINDOW)
    _, by_name = get(client, "operators", **p)  # group_by defaults to name
    code, by_shape = get(client, "operators", **p, group_by="shape")
    assert code == 200 and by_shape["group_by"] == "shape"
    assert len(by_shape["rows"]) > len(by_name["rows"])
    assert any(r["input_shapes"] for r in by_shape["rows"])
    # grouping only splits rows: calls per name add up to the same totals
    calls = collections.Counter()
    for r in by_shape["rows"]:
        calls[r["name"]] += r["calls"]
    assert calls == collections.Counter({r["name"]: r["calls"] for r in by_name["rows"]})
    code, by_stack = get(client, "operators", **p, group_by="stack")
    assert code == 200 and by_stack["has_stacks"] is True
    assert any(r["call_stack"] for r in by_stack["rows"])
    code, err = get(client, "operators", **p, group_by="nonsense")
    assert code == 400 and "group_by" in err["error"]


def test_other_sections_are_json_with_relative_times(client, logdir):
    """Steps, kernels, memory and communication against the raw traces (tests/_raw_kineto.py: json
    and plain loops), their instants relative to the window start."""
    p = window_params("resnet", "worker0", RESNET_WINDOW)
    trace = Trace(logdir / "resnet" / f"worker0.{RESNET_WINDOW}.pt.trace.json.gz")
    code, ov = get(client, "overview", **p)
    assert code == 200, ov
    dur = ov["info"]["duration_ns"]
    assert dur > 0 and ov["steps"]
    for s in ov["steps"]:
        assert 0 <= s["start_ns"] <= dur
    code, k = get(client, "kernels", **p)
    assert code == 200 and k["kernels_by_name"]
    raw_kernels = trace.kernel_rows()
    assert k["kernels_by_name_all"] == len(raw_kernels)
    for row in k["kernels_by_name"]:
        assert [row["calls"], row["total_ns"], row["min_ns"], row["max_ns"]] == raw_kernels[row["name"]], row["name"]
    code, m = get(client, "memory", **p)
    assert code == 200
    raw_memory = [e for e in load_events(logdir / "resnet" / f"worker0.{RESNET_WINDOW}.pt.trace.json.gz")[1]
                  if e.get("name") == "[memory]"]
    running, peaks = collections.Counter(), collections.Counter()
    for e in sorted(raw_memory, key=lambda e: e["ts"]):
        device = "CPU" if e["args"]["Device Type"] == 0 else f"cuda:{e['args']['Device Id']}"
        running[device] += e["args"]["Bytes"]
        peaks[device] = max(peaks[device], running[device])
    assert {d["device"]: d["peak_allocated_bytes"] for d in m["devices"]} == dict(peaks)
    for dev in m["devices"]:
        assert all(-1 <= t <= dur + 1 for t in dev["curve_ts_ns"])
    code, c = get(client, "communication", **get_hta())
    hta = Trace(logdir / "hta" / f"rank1.{HTA_WINDOW}.pt.trace.json.gz")
    nccl = [d for d in hta.device if d.cat == "kernel" and "nccl" in d.name.lower()]
    assert code == 200 and nccl
    assert sum(x["calls"] for x in c["communication"]["collectives"]) == len(nccl) == len(c["communication"]["calls"])
    assert sum(x["total_ns"] for x in c["communication"]["collectives"]) == sum(d.dur for d in nccl)
    hta_start = c["info"]["start_ns"]
    assert sorted(x["start_ns"] for x in c["communication"]["calls"]) == sorted(d.start - hta_start for d in nccl)


def get_hta():
    return window_params("hta", "rank1", HTA_WINDOW)


def test_overview_figures_and_kernel_total(client, logdir):
    """/overview `figures` and /kernels `total_ns` against the raw trace and the old plugin's reading."""
    p = window_params("resnet", "worker0", RESNET_WINDOW)
    code, ov = get(client, "overview", **p)
    assert code == 200, ov
    f = ov["figures"]
    assert f["steps"] == len(ov["steps"]) == 6
    assert f["total_step_ns"] == sum(s["dur_ns"] for s in ov["steps"])
    # the old plugin's GPU utilization (SOURCES.md) is the device share over all six steps; the
    # figure is over the steps the average keeps (the last is distorted by the window's end)
    busy = [s["breakdown"]["compute_ns"] + s["breakdown"]["overlapped_ns"] for s in ov["steps"]]
    assert round(100 * sum(busy) / f["total_step_ns"], 2) == 55.51
    assert [s["distorted"] for s in ov["steps"]] == [False] * 5 + [True]
    assert f["compute_share"] == pytest.approx(sum(busy[:5]) / sum(s["dur_ns"] for s in ov["steps"][:5]), abs=1e-5)
    assert [m["device"] for m in f["memory"]] == ["cuda:0", "CPU"]
    events = json.loads(gzip.decompress((logdir / "resnet" / f"worker0.{RESNET_WINDOW}.pt.trace.json.gz").read_bytes()))
    kernels = [e for e in events["traceEvents"] if e.get("cat") == "Kernel"]
    code, k = get(client, "kernels", **p)
    assert code == 200 and k["total_ns"] == sum(e["dur"] for e in kernels) * 1000  # integer µs in this trace
    top = f["slowest_op"]
    assert top["metric"] == "device_self_ns" and 0 < top["share"] < 1
    _, ops = get(client, "operators", **p)
    rows = [r for r in ops["rows"] if not r["name"].startswith("ProfilerStep#")]
    assert top["name"] == max(rows, key=lambda r: r["device_self_ns"])["name"]
    assert top["share"] == pytest.approx(top["ns"] / sum(r["device_self_ns"] for r in rows))


def test_memory_range(client):
    """/memory_range: the events of /memory allocated in the range, per operator by a loop here."""
    p = get_hta()
    _, mem = get(client, "memory", **p)
    dev = next(m for m in mem["devices"] if m["device"] == "CPU")
    code, whole = get(client, "memory_range", **p, device="CPU")
    assert code == 200 and whole["start_ns"] is None and whole["end_ns"] is None
    assert whole["events"] == dev["events"] and whole["events_total"] == len(dev["events"])
    dur = mem["info"]["duration_ns"]
    lo, hi = dur // 3, 2 * dur // 3
    code, part = get(client, "memory_range", **p, device="CPU", start_ns=str(lo), end_ns=str(hi))
    assert code == 200 and (part["start_ns"], part["end_ns"]) == (lo, hi)
    inside = [e for e in dev["events"] if lo <= e["alloc_ns"] <= hi]
    assert part["events"] == inside and len(inside) > 10
    expect = collections.defaultdict(lambda: [0, 0, 0, 0])
    for e in inside:
        row = expect[e["op"]]
        row[0] += 1
        row[1] += e["bytes"]
        row[2] = max(row[2], e["bytes"])
        row[3] += lo <= e["free_ns"] <= hi
    assert {r["name"]: [r["allocations"], r["bytes"], r["max_bytes"], r["freed"]] for r in part["ops"]} == expect
    for bad in ({"start_ns": "x"}, {"end_ns": "1.5"}, {"start_ns": "10", "end_ns": "5"}):
        code, body = get(client, "memory_range", **p, device="CPU", **bad)
        assert code == 400 and body["error"], bad
    code, body = get(client, "memory_range", **p, device="cuda:9")
    assert code == 404 and "cuda:9" in body["error"]
    code, body = get(client, "memory_range", **p)
    assert code == 400 and body["error"] == "missing parameter: device"


# -- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [
    {"run": "nope", "worker": "worker0", "window": RESNET_WINDOW},
    {"run": "resnet", "worker": "nope", "window": RESNET_WINDOW},
    {"run": "resnet", "worker": "worker0", "window": "42"},
    {"run": "../../etc", "worker": "passwd", "window": "1"},
    {"run": "resnet", "worker": "../../../etc/passwd", "window": RESNET_WINDOW},
    {"run": "resnet", "worker": "worker0", "window": "../worker0.1623143089861.pt.trace.json.gz"},
    {"run": "/etc", "worker": "worker0", "window": RESNET_WINDOW},
])
@pytest.mark.parametrize("route", ["operators", "overview", "memory"])
def test_unknown_ids_are_404(client, params, route):
    code, body = get(client, route, **params)
    assert code == 404 and "unknown" in body["error"]


@pytest.mark.parametrize("params", [{}, {"run": "resnet"}, {"run": "resnet", "worker": "worker0"},
                                    {"worker": "worker0", "window": RESNET_WINDOW}])
def test_missing_params_are_400(client, params):
    code, body = get(client, "operators", **params)
    assert code == 400 and "missing parameter" in body["error"]


def test_corrupt_trace_names_the_file_and_others_still_work(client):
    code, body = get(client, "operators", run="broken", worker="worker0", window="1")
    assert code == 422
    assert body["error"].startswith("broken/worker0.1.pt.trace.json.gz: "), body
    assert len(body["error"]) > len("broken/worker0.1.pt.trace.json.gz: ")
    code, again = get(client, "overview", run="broken", worker="worker0", window="1")
    assert code == 422 and again["error"] == body["error"]
    code, ok = get(client, "operators", **window_params("resnet", "worker0", RESNET_WINDOW))
    assert code == 200 and ok["rows"]
    code, runs = get(client, "runs")
    assert code == 200 and len(runs["runs"]) == 3


# -- discovery ---------------------------------------------------------------------------------------


def test_new_runs_appear_while_running(tmp_path):
    p = make_plugin(tmp_path)
    c = Client(application.TensorBoardWSGI([p]))
    assert get(c, "runs")[1]["runs"] == []
    assert p.is_active() is False
    listing = json.loads(c.get("/data/plugins_listing").get_data())
    assert listing["canning"]["enabled"] is False
    run = tmp_path / "later"
    run.mkdir()
    shutil.copy(fixture_path("kineto", "resnet50_v100", f"worker0.{RESNET_WINDOW}.pt.trace.json.gz"), run)
    deadline = time.monotonic() + 120
    while True:
        body = get(c, "runs")[1]
        if body["runs"]:
            break
        assert time.monotonic() < deadline, body
        p.scanner.join(5)  # a scan runs in the background; wait for it, then ask again
    assert body["runs"][0]["name"] == "later"
    assert p.is_active() is True


def test_is_active_cheap_and_safe_without_logdir(tmp_path):
    assert make_plugin(tmp_path / "missing").is_active() is False
    p = CanningPlugin(base_plugin.TBContext(logdir=None))
    assert p.is_active() is False
    code, body = get(Client(application.TensorBoardWSGI([p])), "runs")
    assert code == 200 and body["runs"] == [] and body["loading"] is False


def test_is_active_does_not_wait_for_a_slow_scan(tmp_path):
    import threading

    release, built = threading.Event(), threading.Event()

    class SlowStore:
        def __init__(self, logdir):
            release.wait(120)  # until the test lets it go: a scan that takes as long as it must
            built.set()

    p = CanningPlugin(base_plugin.TBContext(logdir=str(tmp_path)), store_factory=SlowStore)
    assert p.is_active() is True  # still looking: the tab shows and says so
    code, body = get(Client(application.TensorBoardWSGI([p])), "runs")
    assert code == 200 and body["loading"] is True and body["runs"] == []
    assert not built.is_set()  # both answered while the scan was still blocked, not after it
    release.set()


def test_logdir_normalisation(tmp_path, monkeypatch):
    class Flags:
        logdir_spec = f"first:{tmp_path}/a,second:/elsewhere"

    assert normalize_logdir("", Flags()) == f"{tmp_path}/a"
    Flags.logdir_spec = str(tmp_path / "b")
    assert normalize_logdir("", Flags()) == str(tmp_path / "b")
    assert normalize_logdir("~/x") == os.path.join(os.path.expanduser("~"), "x")
    monkeypatch.chdir(tmp_path)
    assert normalize_logdir("rel/log") == str(tmp_path / "rel" / "log")
    assert normalize_logdir("s3://bucket/log") == "s3://bucket/log"
    assert normalize_logdir("", None) is None


# -- a logdir written by our own handler, from a real torch.profiler run -------------------------------


def test_handler_written_logdir(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    try:
        from canning import profiling_suite as ps
    except ImportError as e:  # pragma: no cover - while the handler is being built
        pytest.skip(f"canning.profiling_suite not importable: {e}")
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    run = tmp_path / "log" / "mlp"
    sched = ps.schedule(wait=1, warmup=1, active=2, repeat=1)
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=sched, record_shapes=True,
                    on_trace_ready=ps.tensorboard_trace_handler(str(run), worker_name="w0")) as prof:
        for _ in range(5):
            net(torch.randn(16, 32)).sum().backward()
            prof.step()
    p = make_plugin(tmp_path / "log")
    c = Client(application.TensorBoardWSGI([p]))
    assert json.loads(c.get("/data/plugins_listing").get_data())["canning"]["enabled"] is True
    _, runs = get(c, "runs")
    (r,) = runs["runs"]
    assert r["name"] == "mlp"
    (w,) = r["workers"]
    assert w["name"] == "w0"
    (win,) = w["windows"]
    assert win["format"] == "canning" and win["status"] == "ready"
    code, body = get(c, "operators", run="mlp", worker="w0", window=win["id"])
    assert code == 200, body
    assert body["has_device"] is False  # CPU only: no device columns
    trace = next(f for f in os.listdir(run) if f.endswith(".pt.trace.json.gz"))
    truth = independent_host_self(run / trace)
    rows = {r["name"]: r for r in body["rows"]}
    for name in ("aten::addmm", "aten::linear", "aten::relu"):
        assert rows[name]["calls"] == truth[name][0]
    heaviest = max(rows.values(), key=lambda r: r["host_self_ns"])
    assert heaviest["name"] in [n for n, _ in sorted(truth.items(), key=lambda kv: -kv[1][1])[:6]]


# -- TensorBoard itself, in a process that cannot import torch ------------------------------------------

LAUNCHER = r"""
import sys
sys.modules["torch"] = None  # any `import torch` now raises ImportError
sys.modules["torch_npu"] = None
from importlib.metadata import entry_points
from tensorboard import default, program
plugins = default.get_plugins()
if not any(ep.name == "canning" for ep in entry_points().select(group="tensorboard_plugins")):
    from canning_tb.plugin.loader import CanningLoader  # not pip-installed: add it by hand
    plugins.append(CanningLoader)
tb = program.TensorBoard(plugins=plugins)
tb.configure(argv=[None] + sys.argv[1:])
sys.exit(tb.main())
"""


def start_tensorboard(logdir, log_path, extra=()):
    """TensorBoard on a free port (--port 0), torch hidden, with `extra` flags; returns (proc, url, log file)."""
    log = open(log_path, "wb")
    proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, "--logdir", str(logdir), "--host", "127.0.0.1",
                             "--port", "0", *extra], stdout=log, stderr=subprocess.STDOUT)  # the environment: inherited
    deadline = time.monotonic() + 180  # a hang guard: a loaded machine starts it slowly
    while True:
        text = Path(log_path).read_text(errors="replace")
        m = re.search(r"TensorBoard \S+ at (http://127\.0\.0\.1:\d+)/", text)
        if m:
            return proc, m.group(1), log
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()  # reaped: no zombie left behind
            log.close()
            raise RuntimeError(f"tensorboard did not start:\n{text}")
        time.sleep(0.1)


def stop_tensorboard(proc, log):
    """Terminate, then kill after 15 s; safe on a process that has already exited."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait()
    log.close()


def fetch_json(url):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(url, timeout=60) as r:
        return json.load(r)


def test_tensorboard_without_torch_lists_and_serves_the_plugin(logdir, tmp_path):
    proc, url, log = start_tensorboard(logdir, tmp_path / "tb.log")
    try:
        entry = fetch_json(url + "/data/plugins_listing")["canning"]
        assert entry["enabled"] is True and entry["tab_name"] == "Canning Profiler"
        runs = fetch_json(url + "/data/plugin/canning/runs")
        assert {r["name"] for r in runs["runs"]} == {"broken", "hta", "resnet"}
        ops = fetch_json(url + f"/data/plugin/canning/operators?run=resnet&worker=worker0&window={RESNET_WINDOW}")
        assert ops["rows"]
    finally:
        stop_tensorboard(proc, log)
    text = (tmp_path / "tb.log").read_text(errors="replace")
    assert "Failed to load plugin" not in text and "Traceback" not in text, text


# -- cross-rank (/cluster) ---------------------------------------------------------------------------


def test_cluster_compares_the_ranks_of_a_run(tmp_path):
    """Two Ascend ranks with HCCL all-reduces: both ranks, links from communication_matrix.json."""
    shutil.copytree(fixture_path("ascend", "level1"), tmp_path / "ascend")
    client = Client(application.TensorBoardWSGI([make_plugin(tmp_path)]))
    code, body, _ = get_cluster(client, run="ascend", worker="rank0", window="default")
    assert code == 200, body
    assert [r["rank"] for r in body["ranks"]] == [0, 1]
    assert {w["worker"] for w in body["workers"]} == {"rank0", "rank1"} and body["problems"] == []
    raw_links = json.loads((tmp_path / "ascend" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
                            / "communication_matrix.json").read_text())
    assert raw_links and body["matrix_source"] == "links" and body["matrix"]
    pairs = {(c["src"], c["dst"]) for c in body["matrix"]}
    assert {(c["src"], c["dst"]) for c in body["matrix_cells"]} == pairs
    for cell in body["matrix_cells"]:
        same = [c for c in body["matrix"] if (c["src"], c["dst"]) == (cell["src"], cell["dst"])]
        assert cell["bytes"] == sum(max(0, c["bytes"]) for c in same)
        assert sorted(cell["transports"]) == sorted({c["transport"] for c in same})
    assert {s["metric"] for s in body["slow_ranks"]} == {"computing", "communication", "free"}
    assert all(s["slowest_rank"] in (0, 1) for s in body["slow_ranks"])
    assert body["collectives"] and body["collectives"][0]["kind"] == "AllReduce"
    code, same = get(client, "cluster", run="ascend", window_index="0")  # digested: no 202 now
    assert code == 200 and same["ranks"] == body["ranks"]
    assert get(client, "cluster")[0] == 400
    assert get(client, "cluster", run="ascend")[0] == 400
    assert get(client, "cluster", run="nope", window_index="0")[0] == 404
    assert get(client, "cluster", run="ascend", worker="rank0", window="9")[0] == 404
    assert get(client, "cluster", run="ascend", window_index="x")[0] == 400
    assert get(client, "cluster", run="ascend", window_index="5")[0] == 404


def get_cluster(client, timeout=180, **params):
    """GET /cluster until it stops answering 202; returns (code, body, the 202 bodies seen)."""
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        code, body = get(client, "cluster", **params)
        if code != 202:
            return code, body, seen
        assert body["loading"] is True and 0 <= body["done"] <= body["total"], body
        seen.append(body)
        assert time.monotonic() < deadline, f"/cluster still loading after {timeout} s: {body}"
        time.sleep(0.2)


def raw_collective_kernels(path):
    """{kind: calls} of one rank, counted from the raw trace: NCCL kernels by their name."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    kinds = {"AllReduce": ("ncclKernel_AllReduce", "ncclDevKernel_AllReduce"),
             "AllToAll": ("ncclKernel_SendRecv", "ncclDevKernel_SendRecv"),  # all_to_all runs as send/recv
             "AllGather": ("ncclKernel_AllGather", "ncclDevKernel_AllGather"),
             "ReduceScatter": ("ncclKernel_ReduceScatter", "ncclDevKernel_ReduceScatter"),
             "Broadcast": ("ncclKernel_Broadcast", "ncclDevKernel_Broadcast")}
    out = collections.Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            for kind, prefixes in kinds.items():
                if e["name"].startswith(prefixes):
                    out[kind] += 1
    # the all_to_all ranges of the host say the same
    assert out["AllToAll"] == sum(1 for e in events if e.get("cat") == "user_annotation" and e.get("name") == "nccl:all_to_all")
    return out


def test_cluster_digests_eight_ranks_in_parallel_and_counts_collectives(tmp_path):
    src = fixture_path("param", "dlrm_8ranks")
    shutil.copytree(src, tmp_path / "dlrm")
    client = Client(application.TensorBoardWSGI([make_plugin(tmp_path)]))
    code, body, seen = get_cluster(client, run="dlrm", window_index="0")
    assert code == 200, body
    assert seen and seen[0]["total"] == 8, seen  # cold: the first answers say how far the digests are
    assert [b["done"] for b in seen] == sorted(b["done"] for b in seen)
    assert [r["rank"] for r in body["ranks"]] == list(range(8)) and body["problems"] == []
    expected = {}  # rank -> {kind: calls}, from the raw traces
    for f in sorted((tmp_path / "dlrm").glob("*.pt.trace.json.gz")):
        with gzip.open(f, "rt") as fh:
            rank = json.load(fh)["distributedInfo"]["rank"]
        expected[rank] = raw_collective_kernels(f)
    assert sorted(expected) == list(range(8))
    got = {r: collections.Counter() for r in range(8)}
    for c in body["collectives"]:
        for r, v in c["per_rank"].items():
            got[int(r)][c["kind"]] += v["calls"]
    assert got == {r: +c for r, c in expected.items()}
    kinds = collections.Counter()
    for c in body["collectives"]:
        kinds[c["kind"]] += c["calls"]
    assert kinds == sum(expected.values(), collections.Counter())
    # per-rank figures for the Overview's run table, selected from each rank's digest
    assert [p["rank"] for p in body["per_rank"]] == list(range(8))
    for p, r in zip(body["per_rank"], body["ranks"]):
        assert p["step_ns"] == r["step_ns"] > 0
        assert 0 <= p["compute_share"] <= 1 and 0 <= p["comm_not_hidden_share"] <= 1
        assert p["slowest_op"] and p["slowest_op_ns"] > 0
        code, ov = get(client, "overview", run="dlrm", worker=p["worker"], window=p["window"])
        assert ov["average"]["total_ns"] == p["step_ns"]
        f = ov["figures"]  # one function: the same figures in both places
        assert (f["compute_share"], f["comm_not_hidden_share"]) == (p["compute_share"], p["comm_not_hidden_share"])
        assert (f["slowest_op"]["name"], f["slowest_op"]["ns"]) == (p["slowest_op"], p["slowest_op_ns"])
    s = body["run_summary"]
    assert s["ranks"] == 8
    steps = [p["step_ns"] for p in body["per_rank"]]
    assert s["step_ns"]["min"] == min(steps) and s["step_ns"]["max"] == max(steps)
    assert s["slowest_op"]["ns"] == max(p["slowest_op_ns"] for p in body["per_rank"])
    # digested now: answers at once
    code, again = get(client, "cluster", run="dlrm", window_index="0")
    assert code == 200 and again["ranks"] == body["ranks"]


def raw_stacks(path, name):
    """{call stack: calls} of one operator, from the raw trace's "Call stack" args."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    return collections.Counter(e["args"]["Call stack"] for e in events
                               if e.get("ph") == "X" and e.get("cat") in ("Operator", "cpu_op") and e.get("name") == name
                               and e.get("args", {}).get("Call stack"))


def test_operator_detail_stacks_and_kernels(client, logdir):
    p = window_params("resnet", "worker0", RESNET_WINDOW)
    _, by_name = get(client, "operators", **p)
    code, d = get(client, "operators", **p, detail="aten::conv2d")
    assert code == 200, d
    # one row per call stack, with its calls, as the raw trace has them
    truth = raw_stacks(logdir / "resnet" / f"worker0.{RESNET_WINDOW}.pt.trace.json.gz", "aten::conv2d")
    assert {r["call_stack"]: r["calls"] for r in d["stacks"]} == dict(truth)
    assert all(r["name"] == "aten::conv2d" and r["host_total_ns"] >= r["host_self_ns"] >= 0 for r in d["stacks"])
    # kernels: those of the operator's row (conv2d launches none itself; cudnn_convolution does)
    assert d["kernels"] == next(r for r in by_name["rows"] if r["name"] == "aten::conv2d")["kernels"] == []
    row = max(by_name["rows"], key=lambda r: r["device_self_ns"])
    code, d = get(client, "operators", **p, detail=row["name"])
    assert d["kernels"] == row["kernels"] and d["kernels"]
    assert all(k["calls"] > 0 and k["total_ns"] > 0 for k in d["kernels"])
    _, shapes = get(client, "operators", **p, group_by="shape")
    row = next(r for r in shapes["rows"] if r["name"] == "aten::conv2d" and r["input_shapes"])
    code, d2 = get(client, "operators", **p, detail=row["name"], shapes=row["input_shapes"])
    assert code == 200 and d2["kernels"] == row["kernels"] and d2["input_shapes"] == row["input_shapes"]
    assert get(client, "operators", **p, detail="no such op")[0] == 404


def test_plugin_module_loads_without_numpy_or_torch():
    """What TensorBoard imports at start (loader -> plugin) needs neither numpy nor torch: both are
    hidden in a fresh interpreter, and building the plugin must still work."""
    code = ("import sys; sys.modules['numpy'] = None; sys.modules['torch'] = None\n"
            "from tensorboard.plugins import base_plugin\n"
            "from canning_tb.plugin.loader import CanningLoader\n"
            "plugin = CanningLoader().load(base_plugin.TBContext(logdir=None))\n"
            "assert '/cluster' in plugin.get_plugin_apps() and '/capture' in plugin.get_plugin_apps()\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
