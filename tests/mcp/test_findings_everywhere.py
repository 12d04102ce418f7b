"""The same findings, in the same order, with the same figures, everywhere (issue 39): the plugin's /suggestions and
/overview (TensorBoard's WSGI app), `canning-prof --mode=view` as JSON and as text (a real CLI process) and the MCP
server's `findings` and `overview` tools (the SDK's client over stdio to a real `canning-prof mcp`), each against the
window's digest as stored: its file in the cache parsed here with protobuf, its rule_hits split by their
`observation` flag. Observations come after the findings everywhere, with no gain; each finding's simulated gain
range and edit are the digest's. Two fixtures: ResNet (a finding and two observations) and the TensorBoard
plugin's GPU-metrics trace (findings, an observation and checks that could not judge)."""
import json
import shutil
import subprocess
import sys
import threading

import pytest
from tensorboard.backend import application
from werkzeug.test import Client

from _mcp import Session, server_env, stdio_params
from conftest import fixture_path
from test_plugin_routes import get, make_plugin

from canning_tb.analysis import digest_pb2
from canning_tb.store import Store

FIGURES = ("rule", "title", "severity", "observation", "gain_ns")
CLAIM = ("gain_low_ns", "gain_high_ns", "edit")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("everywhere_logdir")
    cache = tmp_path_factory.mktemp("everywhere_cache")
    (root / "resnet").mkdir()
    shutil.copy(fixture_path("kineto", "resnet50_v100", "worker0.1623143089861.pt.trace.json.gz"), root / "resnet")
    shutil.copytree(fixture_path("kineto", "tbp_gpu_metrics"), root / "gpum")
    store = Store(str(root), cache_dir=str(cache))
    windows = [(run, w.name, win.id) for run in ("resnet", "gpum") for w in store.workers(run)
               for win in store.windows(run, w.name)]
    started = {}
    starting = threading.Thread(target=lambda: started.update(session=Session(stdio_params(root, cache))))
    starting.start()
    try:
        assert store.prefetch(windows) == {}
        starting.join(120)
        plugin = make_plugin(root, store_factory=lambda logdir: Store(logdir, cache_dir=str(cache)))
        yield {"root": root, "cache": cache, "store": store, "windows": windows, "s": started["session"],
               "http": Client(application.TensorBoardWSGI([plugin]))}
    finally:
        starting.join(120)
        if "session" in started:
            started["session"].close()


def stored(world, run, worker, window) -> list[dict]:
    """The digest's rule_hits, in their stored order, from the digest file parsed here."""
    path = world["store"].digest_cache_path(run, worker, window)
    digest = digest_pb2.Digest()
    with open(path, "rb") as f:
        digest.ParseFromString(f.read())
    return [{**{k: getattr(h, k) for k in FIGURES}, **{k: getattr(h.claim, k) for k in CLAIM}, "needs": h.needs}
            for h in digest.rule_hits]


def brief(found: list[dict]) -> list[dict]:
    return [{**{k: f[k] for k in FIGURES}, **{k: f["claim"][k] for k in CLAIM}, "needs": f["needs"]} for f in found]


def split(hits: list[dict]) -> tuple[list, list]:
    return [h for h in hits if not h["observation"]], [h for h in hits if h["observation"]]


def cli(world, *args) -> str:
    done = subprocess.run([sys.executable, "-m", "canning_tb.cli.main", "--mode=view", *args,
                           f"--cache-dir={world['cache']}"], capture_output=True, text=True, timeout=240,
                          env=server_env(world["cache"]))
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_every_front_door_gives_the_digests_findings_in_its_order(world):
    seen_observation = seen_finding = False
    for run, worker, window in world["windows"]:
        want = stored(world, run, worker, window)
        assert want, (run, worker, window)
        findings, observations = split(want)
        seen_observation |= bool(observations)
        seen_finding |= any(f["gain_ns"] >= 0 for f in findings)
        # observations carry no gain; a finding's gain lies in its simulated range
        assert all(o["gain_ns"] == -1 and o["gain_low_ns"] == -1 and o["edit"] == "" for o in observations)
        for f in findings:
            if f["gain_low_ns"] >= 0:
                assert f["gain_low_ns"] <= f["gain_ns"] <= f["gain_high_ns"] and f["edit"], f
        where = {"run": run, "worker": worker, "window": window}
        code, body = get(world["http"], "suggestions", **where)
        assert code == 200 and brief(body["findings"]) == want
        code, body = get(world["http"], "overview", **where)
        assert code == 200 and brief(body["rule_hits"]) == want
        tool = world["s"].answer("findings", {**where, "limit": 50})
        assert brief(tool["findings"]) == want and tool["total"] == len(want)
        top = world["s"].answer("overview", where)["findings"]
        assert [{k: f[k] for k in ("rule", "title", "gain_ns")} for f in top] == \
               [{k: f[k] for k in ("rule", "title", "gain_ns")} for f in want[:len(top)]]
        (report,) = [w for w in json.loads(cli(world, f"--input={world['root'] / run}", "--format=json"))["windows"]
                     if w["window"] == window and w["worker"] == worker]
        assert brief(report["findings"]) == want
        # the text report: the findings numbered first, then the observations under their own heading
        text = cli(world, f"--input={world['root'] / run}", "--detail")
        titles = [h["title"] for h in findings] + [h["title"] for h in observations]
        at = [text.find(f"[{h['severity']}] {h['title']}") for h in findings + observations]
        assert -1 not in at and at == sorted(at), (titles, at)
        if observations:
            heading = text.find("Observations (no simulated gain):")
            assert at[len(findings) - 1] < heading < at[len(findings)] if findings else heading < at[0]
        else:
            assert "Observations (no simulated gain):" not in text
    assert seen_observation and seen_finding
