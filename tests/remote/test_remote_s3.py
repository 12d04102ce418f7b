"""Logdirs on object storage, against a real S3 API server on localhost (moto in server mode, with
authentication on): the handler writing a real 2-rank gloo run to s3://, TensorBoard listing and
showing it from the digests written at the source, a window appearing while TensorBoard runs, half
a window never shown, and bad credentials or a missing bucket said clearly by the plugin and the CLI."""
import gzip
import io
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import pytest

from _procs import communicate_all
from _s3 import s3  # noqa: F401  (the fixture)
from test_plugin_routes import start_tensorboard, stop_tensorboard

REPO = Path(__file__).resolve().parents[2]
BAD_SECRET = "not-the-secret-0123456789"


def get(url):
    """(status, JSON body) of a GET, errors included."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=60) as r:
            body = r.read()
            return r.status, (json.loads(body) if r.headers.get_content_type() == "application/json" else body)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def route(base, name, **params):
    return get(f"{base}/data/plugin/canning/{name}?{urllib.parse.urlencode(params)}")


def listed(base):
    """{(run, worker, window id)} of /runs."""
    _, body = get(base + "/data/plugin/canning/runs")
    return {(r["name"], w["name"], win["id"]) for r in body["runs"] for w in r["workers"] for win in w["windows"]}


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def run_two_ranks(url, cwd):
    """examples/train_ddp.py on 2 gloo ranks (one process each, as torchrun starts them), writing to url."""
    from test_handler_ddp import free_port
    port, procs = free_port(), []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2",
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        procs.append(subprocess.Popen([sys.executable, str(REPO / "examples" / "train_ddp.py"), url, "10"], env=env,
                                      cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = communicate_all(procs, 300)  # a hung rank is killed on every path
    assert [p.returncode for p in procs] == [0, 0], outs
    return outs


def profile_one_window(url, worker, digest=True):
    """One real torch.profiler window of this process through the handler into url."""
    torch = pytest.importorskip("torch")
    from canning import profiling_suite as ps
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.schedule(wait=0, warmup=1, active=1, repeat=1),
                    on_trace_ready=ps.tensorboard_trace_handler(url, worker_name=worker, digest=digest)) as prof:
        for _ in range(3):
            x = torch.randn(128, 128)
            (x @ x).sum()
            prof.step()


@pytest.fixture(scope="module")
def gloo_bucket(s3, tmp_path_factory):  # noqa: F811
    """A real 2-rank gloo run (2 windows per rank) written by the handler to s3://canning/logs/run1:
    {key: manifest} once every window and its digest at the source are in the bucket."""
    pytest.importorskip("torch.distributed")
    fs = s3.fs()
    fs.mkdir("canning")
    cwd = tmp_path_factory.mktemp("train")
    outs = run_two_ranks("s3://canning/logs/run1", cwd)
    assert not (cwd / "s3:").exists(), "the handler wrote into a local folder named s3:"
    assert not any("could not write" in out for out in outs), outs
    # every window uploaded under its own name, the manifest last: no temporary key is left
    keys = fs.find("canning/logs")
    assert not [k for k in keys if os.path.basename(k).startswith(".") or k.endswith(".tmp")], keys
    manifests = {k: json.loads(fs.cat(k)) for k in keys if k.endswith(".canning.json")}
    assert sorted(m["rank"] for m in manifests.values()) == [0, 0, 1, 1]
    # each rank digests its own windows in the background: wait for the four digests
    wait_for(lambda: len(fs.glob("canning/logs/run1/*.digest.pb")) == 4, 120, "the digests written at the source")
    return manifests


@pytest.mark.slow
def test_gloo_run_written_to_s3_is_listed_and_shown_live(s3, gloo_bucket, tmp_path, tmp_path_factory,  # noqa: F811
                                                         monkeypatch):
    fs, manifests = s3.fs(), gloo_bucket
    cache = tmp_path / "viewer-cache"
    monkeypatch.setenv("CANNING_CACHE_DIR", str(cache))  # TensorBoard inherits it: its copies land here
    proc, base, log = start_tensorboard("s3://canning/logs", tmp_path_factory.mktemp("tb") / "tb.log")
    try:
        wait_for(lambda: len(listed(base)) == 4, 60, "the four windows in /runs")
        _, runs = get(base + "/data/plugin/canning/runs")
        assert runs["error"] is None and [r["name"] for r in runs["runs"]] == ["run1"]
        workers = runs["runs"][0]["workers"]
        assert sorted(w["rank"] for w in workers) == [0, 1]
        for worker in workers:
            for win in worker["windows"]:
                man = next(m for k, m in manifests.items() if k.endswith(f"{worker['name']}.{win['id']}.canning.json"))
                status, body = route(base, "overview", run="run1", worker=worker["name"], window=win["id"])
                assert status == 200, body
                assert body["info"]["rank"] == man["rank"]
                assert [s["number"] for s in body["steps"]] == man["steps"]
        # the views came from the digests: no trace was copied to the viewer
        assert not [p for p in cache.rglob("*.pt.trace.json*")]
        # the timeline's download copies the trace on demand, byte for byte
        worker, win = workers[0]["name"], workers[0]["windows"][0]["id"]
        status, body = route(base, "timeline_download", run="run1", worker=worker, window=win)
        assert status == 200 and body == fs.cat(f"canning/logs/run1/{worker}.{win}.pt.trace.json.gz")
        assert json.loads(gzip.decompress(body))["distributedInfo"]["rank"] == workers[0]["rank"]

        # half a window (an upload caught under its temporary key) is never shown, nor copied
        half = gzip.compress(fs.cat(f"canning/logs/run1/{worker}.{win}.pt.trace.json.gz"))[:500]
        fs.pipe("canning/logs/run1/.late.1.pt.trace.json.gz.otherhost.7.tmp", half)
        # a window written while TensorBoard runs appears, and every window listed meanwhile answers
        profile_one_window("s3://canning/logs/run1", "late")

        def late_listed():
            found = listed(base)
            for run, wk, wid in found:
                assert fs.exists(f"canning/logs/{run}/{wk}.{wid}.canning.json")
            return any(wk == "late" for _, wk, _ in found)
        wait_for(late_listed, 60, "the new window in /runs")
        late_id = next(wid for _, wk, wid in listed(base) if wk == "late")
        status, body = route(base, "overview", run="run1", worker="late", window=late_id)
        assert status == 200 and len(body["steps"]) == 1
        assert not [p for p in cache.rglob("*.tmp")] and not [p for p in cache.rglob(".late*")]
    finally:
        stop_tensorboard(proc, log)


def _cli(*args, env):
    return subprocess.run([sys.executable, "-m", "canning_tb.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def test_bad_credentials_and_missing_bucket_said_clearly_by_cli_and_plugin(s3, tmp_path, tmp_path_factory,  # noqa: F811
                                                                          monkeypatch):
    fs = s3.fs()
    if not fs.exists("guarded"):
        fs.mkdir("guarded")
    fs.pipe("guarded/logs/run1/readme.txt", b"nothing to see")
    bad = {**os.environ, "AWS_SECRET_ACCESS_KEY": BAD_SECRET}

    done = _cli("--mode=view", "--input=s3://guarded/logs", env=bad)
    assert done.returncode == 2, done.stderr
    assert "s3://guarded/logs: access denied" in done.stderr and "credentials" in done.stderr
    assert BAD_SECRET not in done.stderr + done.stdout and "Traceback" not in done.stderr

    done = _cli("--mode=view", "--input=s3://no-such-bucket/logs", env=dict(os.environ))
    assert done.returncode == 2 and "s3://no-such-bucket/logs: no such bucket or path" in done.stderr, done.stderr

    for logdir, env, said in (("s3://guarded/logs", {"AWS_SECRET_ACCESS_KEY": BAD_SECRET}, "access denied"),
                              ("s3://no-such-bucket/logs", {}, "no such bucket or path")):
        with monkeypatch.context() as m:
            for k, v in env.items():
                m.setenv(k, v)
            proc, base, log = start_tensorboard(logdir, tmp_path_factory.mktemp("tb") / "tb.log")
        try:
            _, plugins = get(base + "/data/plugins_listing")
            assert plugins["canning"]["enabled"] is True  # the tab is shown, with the reason
            body = wait_for(lambda: get(base + "/data/plugin/canning/runs")[1]["error"], 30, "the scan's error")
            assert body.startswith(f"{logdir}: {said}"), body
            status, answer = route(base, "overview", run="run1", worker="w", window="1")
            assert status == 503 and answer["error"].startswith(f"{logdir}: {said}")
            assert BAD_SECRET not in Path(log.name).read_text(errors="replace")
        finally:
            stop_tensorboard(proc, log)


def test_handler_to_a_bucket_it_cannot_write_warns_and_training_goes_on(s3, monkeypatch, caplog):  # noqa: F811
    fs = s3.fs()
    if not fs.exists("guarded"):
        fs.mkdir("guarded")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", BAD_SECRET)
    with caplog.at_level("WARNING"):
        profile_one_window("s3://guarded/elsewhere", "w")
    said = [r.getMessage() for r in caplog.records if "could not write profiler window" in r.getMessage()]
    assert said and "s3://guarded/elsewhere: access denied" in said[0] and BAD_SECRET not in said[0]


def test_digest_command_digests_a_bucket_beside_its_windows(s3, tmp_path, monkeypatch, capsys):  # noqa: F811
    from canning_tb.analysis import digest_pb2
    from canning_tb.cli.main import main
    from canning_tb.store import Store, digest_of
    fs = s3.fs()
    fs.mkdir("batch")
    for worker in ("a", "b"):
        profile_one_window("s3://batch/logs/run", worker, digest=False)
    assert not fs.glob("batch/logs/run/*.digest.pb")
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["digest", "--input=s3://batch/logs", "--workers=2"]) == 0
    out = capsys.readouterr().out
    assert "2 digested" in out and "into s3://batch/logs/run/canning-digests.zip" in out
    fs.invalidate_cache()
    # the run's pack holds the manifests and the digests just written, as the bucket lists them now
    with zipfile.ZipFile(io.BytesIO(fs.cat("batch/logs/run/canning-digests.zip"))) as pack:
        index = json.loads(pack.read("index.json"))["files"]
        listed = {os.path.basename(k): v for k, v in fs.find("batch/logs/run", detail=True).items()
                  if k.endswith((".canning.json", ".digest.pb"))}
        assert sorted(index) == sorted(listed) and len(index) == 4
        for name, info in listed.items():
            assert index[name] == {"etag": info["ETag"], "size": info["size"]}
            assert pack.read(name) == fs.cat(f"batch/logs/run/{name}")
    # each digest beside its manifest in the bucket, equal to one computed here from a plain download
    for manifest in fs.glob("batch/logs/run/*.canning.json"):
        local = tmp_path / "check" / os.path.basename(manifest)
        local.parent.mkdir(exist_ok=True)
        for key in fs.glob(manifest[: -len(".canning.json")] + ".*"):
            fs.get_file(key, str(local.parent / os.path.basename(key)))
        store = Store(str(local.parent), cache_dir=str(tmp_path / "here"))
        (run,) = store.runs()
        (worker,) = store.workers(run)
        (window,) = store.windows(run, worker.name)
        got = digest_pb2.Digest.FromString(fs.cat(manifest[: -len(".canning.json")] + ".digest.pb"))
        want = digest_of(window, worker.name)
        # the files it names are the bucket's, not the copies a job read
        assert list(got.window.source_files) == [f"s3://batch/logs/run/{os.path.basename(f)}"
                                                 for f in want.window.source_files]
        got.window.ClearField("source_files")
        want.window.ClearField("source_files")
        assert got == want
        for f in local.parent.iterdir():
            f.unlink()


def test_new_windows_appear_without_listing_the_whole_prefix(s3, tmp_path):  # noqa: F811
    from canning_tb.store.mirror import Mirror
    fs = s3.fs()
    fs.mkdir("live")
    profile_one_window("s3://live/logs/run", "a", digest=False)
    mirror = Mirror("s3://live/logs", local_root=str(tmp_path / "copy"), full_every=3600)
    mirror.sync()  # the first sync lists the whole prefix once
    listed_paths = []
    real_ls = mirror.fs.ls

    def ls(path, **kwargs):
        listed_paths.append(path)
        return real_ls(path, **kwargs)

    def find(*args, **kwargs):
        raise AssertionError("listed the whole prefix again")

    mirror.fs.ls, mirror.fs.find = ls, find
    profile_one_window("s3://live/logs/run", "b", digest=False)
    mirror.sync()
    assert sorted(listed_paths) == ["live/logs", "live/logs/run"]  # the root and the run folder, one page each
    copied = sorted(os.listdir(os.path.join(mirror.local, "run")))
    assert len([n for n in copied if n.endswith(".canning.json")]) == 2
    assert not [n for n in copied if ".pt.trace.json" in n]  # traces only when a view needs them


@pytest.mark.slow
@pytest.mark.browser
def test_the_browser_shows_the_s3_run_and_says_why_a_bucket_cannot_be_read(s3, gloo_bucket, page, errors,  # noqa: F811
                                                                              tmp_path, tmp_path_factory, monkeypatch):
    from playwright.sync_api import expect

    from _tb import T, open_plugin
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "viewer-cache"))
    proc, base, log = start_tensorboard("s3://canning/logs", tmp_path_factory.mktemp("tb") / "tb.log")
    try:
        frame = open_plugin(page, base)
        expect(frame.locator("#run-select option")).to_have_text(["run1"], timeout=T)
        for rank in (0, 1):  # (another test of this module may have added a worker)
            expect(frame.locator("#worker-select option", has_text=f"rank{rank}.")).to_have_count(1, timeout=T)
        rank1 = frame.locator("#worker-select option", has_text="rank1.").get_attribute("value")
        frame.locator("#worker-select").select_option(rank1)
        expect(frame.locator("#window-select option")).to_have_count(2)  # its two windows
        expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
        assert not errors
    finally:
        stop_tensorboard(proc, log)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", BAD_SECRET)
    proc, base, log = start_tensorboard("s3://canning/logs", tmp_path_factory.mktemp("tb") / "tb.log")
    try:
        frame = open_plugin(page, base)
        expect(frame.locator("#canning-root")).to_contain_text("s3://canning/logs: access denied", timeout=T)
        expect(frame.locator("#canning-root")).not_to_contain_text(BAD_SECRET)
    finally:
        stop_tensorboard(proc, log)


def test_a_killed_ranks_temporary_keys_and_staging_are_removed_at_the_next_start(s3):  # noqa: F811
    import socket
    import tempfile
    fs = s3.fs()
    fs.mkdir("stale")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid is free now: what a rank killed while uploading leaves behind
    host = socket.gethostname()
    stale = f"stale/logs/run/.w.1.pt.trace.json.gz.{host}.{dead.pid}.tmp"
    elsewhere = f"stale/logs/run/.w.1.pt.trace.json.gz.otherhost.{dead.pid}.tmp"  # another machine's
    fs.pipe(stale, b"half")
    fs.pipe(elsewhere, b"half")
    stage = Path(tempfile.gettempdir()) / f"canning-stage-{dead.pid}-x"
    stage.mkdir()
    (stage / "w.1.pt.trace.json.gz").write_bytes(b"half")
    profile_one_window("s3://stale/logs/run", "w", digest=False)
    fs.invalidate_cache()
    assert not fs.exists(stale) and fs.exists(elsewhere) and not stage.exists()
    assert len(fs.glob("stale/logs/run/*.canning.json")) == 1


def test_a_prefix_not_written_yet_is_empty_not_an_error(s3, tmp_path, monkeypatch):  # noqa: F811
    from canning_tb.store import Store
    fs = s3.fs()
    if not fs.exists("early"):
        fs.mkdir("early")
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "cache"))
    store = Store("s3://early/logs")  # TensorBoard started before the job's first window
    assert store.runs() == []
    fs.pipe("early/logs/run/w.1.pt.trace.json", b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}]}')
    store.remote.full_every = 0  # list the whole prefix again now
    store.refresh()
    assert store.runs() == ["run"]
