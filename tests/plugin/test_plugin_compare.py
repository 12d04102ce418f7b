"""GET /compare through a real TensorBoard WSGI app: two windows of one run, two ranks, two runs
(the real before/after pair of tests/_compare_pairs.py), the logdir's name map, and the errors;
figures checked against a second reading of the raw files."""
import gzip
import json
import shutil
import statistics

import pytest
from tensorboard.backend import application
from werkzeug.test import Client

from _compare_pairs import ACTIVE, step_durations_us, write_gelu
from conftest import fixture_path
from test_plugin_routes import RESNET_WINDOW, build_logdir, get, make_plugin

RESNET_WINDOW_2 = "1623143566756"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = build_logdir(tmp_path_factory.mktemp("compare_logdir"))
    shutil.copytree(fixture_path("ascend", "level1"), root / "ascend")
    write_gelu(str(root / "gelu_unfused"), fused=False)
    write_gelu(str(root / "gelu_fused"), fused=True)
    (root / "canning_names.json").write_text(json.dumps({"version": 1, "operators": {"aten::gelu": "aten::tanh"}}))
    return root


@pytest.fixture(scope="module")
def client(logdir):
    return Client(application.TensorBoardWSGI([make_plugin(logdir)]))


def params(base, target, **more):
    return {"base_run": base[0], "base_worker": base[1], "base_window": base[2],
            "run": target[0], "worker": target[1], "window": target[2], **more}


def only_window(client, run):
    code, listing = get(client, "runs")
    (entry,) = [r for r in listing["runs"] if r["name"] == run]
    worker = entry["workers"][0]
    return run, worker["name"], worker["windows"][0]["id"]


def raw_kernels_per_step(path):
    with gzip.open(path, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = sum(e.get("cat") == "Operator" and e["name"].startswith("ProfilerStep#") for e in events)
    return 1000 * sum(e["dur"] for e in events if e.get("cat") == "Kernel") / steps


def raw_step_mean_us(path):
    with gzip.open(path, "rt") as f:
        steps = [e["dur"] for e in json.load(f)["traceEvents"]
                 if e.get("ph") == "X" and e.get("cat") == "Operator" and e["name"].startswith("ProfilerStep#")]
    return sum(steps) / len(steps)


def test_two_windows_of_one_run(client, logdir):
    base, target = ("resnet", "worker0", RESNET_WINDOW), ("resnet", "worker0", RESNET_WINDOW_2)
    code, body = get(client, "compare", **params(base, target, table="kernels"))
    assert code == 200, body
    assert body["table"] == "kernels" and body["total"] == body["all_rows"] == len(body["rows"])
    assert body["base_window"]["label"].startswith("window 1") and body["target_window"]["label"].startswith("window 2")
    for side, window in (("base", RESNET_WINDOW), ("target", RESNET_WINDOW_2)):
        truth = raw_kernels_per_step(logdir / "resnet" / f"worker0.{window}.pt.trace.json.gz")
        assert sum(r[f"{side}_ns"] for r in body["rows"]) == pytest.approx(truth, abs=10)
    # window 2 is faster (its raw ProfilerStep# ranges are shorter): the verdict says so, in %
    host_steps = [raw_step_mean_us(logdir / "resnet" / f"worker0.{w}.pt.trace.json.gz") for w in (RESNET_WINDOW, RESNET_WINDOW_2)]
    pct = body["verdict"]["step_time"]["delta_pct"]
    assert host_steps[1] < host_steps[0] and -50 < pct < 0
    # the step's length in %, the speed as the ratio of the means (by hand from the raw ranges)
    assert body["verdict"]["text"].startswith(f"step {abs(pct):.0f} % shorter (")
    ratio = float(body["verdict"]["text"].split("(")[1].split("x faster)")[0])
    assert ratio == pytest.approx(host_steps[0] / host_steps[1], abs=0.02)
    contrib = body["contributors"]
    # what the listed contributors explain is their deltas' sum, added here from the list
    assert contrib["operators"] and contrib["explained_ns"] == pytest.approx(sum(o["delta_ns"] for o in contrib["operators"]))
    # matched by stack: the rows carry their call stacks, without line numbers
    code, by_stack = get(client, "compare", **params(base, target, group_by="stack"))
    assert code == 200 and by_stack["mode"] == "stack"
    assert any(r["call_stack"] for r in by_stack["rows"])
    assert not any("(4" in r["call_stack"] for r in by_stack["rows"])


def test_two_ranks(client, logdir):
    code, body = get(client, "compare", **params(("ascend", "rank0", "default"), ("ascend", "rank1", "default"),
                                                 table="kernels"))
    assert code == 200, body
    assert (body["base_window"]["rank"], body["target_window"]["rank"]) == (0, 1)
    assert body["rows"] and {r["status"] for r in body["rows"]} <= {"changed", "same"}
    (allreduce,) = [r for r in body["communication_by_kind"] if r["kind"] == "AllReduce"]
    assert allreduce["base_calls"] == allreduce["target_calls"] > 0


def test_two_runs_through_the_logdirs_name_map(client, logdir):
    base, target = only_window(client, "gelu_unfused"), only_window(client, "gelu_fused")
    code, body = get(client, "compare", **params(base, target))
    assert code == 200, body
    assert body["name_map"] == {"file": "canning_names.json", "problem": None}
    rows = {r["key"]: r for r in body["rows"]}
    assert "aten::gelu" not in rows  # mapped onto aten::tanh by the logdir's map
    assert rows["aten::tanh"]["target_names"] == ["aten::gelu"] and rows["aten::tanh"]["target_calls"] == 1
    assert body["target"]["steps"] == body["base"]["steps"] == ACTIVE
    # the verdict's direction and size are the raw ProfilerStep# ranges' (fused is faster on a quiet
    # machine; a loaded runner can turn it around, and the verdict must then say so)
    means = [statistics.mean(step_durations_us(str(logdir / run))) for run in ("gelu_unfused", "gelu_fused")]
    step = body["verdict"]["step_time"]
    assert step["delta_pct"] == pytest.approx(100 * (means[1] - means[0]) / means[0], abs=0.5)
    if abs(step["delta_pct"]) >= 2:  # 'about the same' below 1 %
        assert step["text"].endswith("faster)" if means[1] < means[0] else "slower)")
    # the contributors: the step change is the raw steps' means' difference; the listed ones explain
    # their deltas' sum and the rest is the difference of the two (both read here, not from one another)
    contrib = body["contributors"]
    delta = 1000 * (means[1] - means[0])
    assert contrib["step_delta_ns"] == pytest.approx(delta, abs=1000)
    listed = sum(o["delta_ns"] for o in contrib["operators"])
    assert contrib["explained_ns"] == pytest.approx(listed)
    assert contrib["unexplained_ns"] == pytest.approx(delta - listed, abs=1000)


def test_a_bad_name_map_is_reported_and_the_defaults_used(logdir, tmp_path):
    shutil.copytree(logdir / "resnet", tmp_path / "resnet")
    (tmp_path / "canning_names.json").write_text('{"operators": ["not", "a", "map"]}')
    client = Client(application.TensorBoardWSGI([make_plugin(tmp_path)]))
    code, body = get(client, "compare", **params(("resnet", "worker0", RESNET_WINDOW),
                                                  ("resnet", "worker0", RESNET_WINDOW_2)))
    assert code == 200
    assert body["name_map"]["file"] == "canning_names.json" and "string -> string" in body["name_map"]["problem"]


@pytest.mark.parametrize("query,code,message", [
    ({"run": "resnet", "worker": "worker0", "window": RESNET_WINDOW, "base_run": "resnet"}, 400,
     "name the baseline with base_run, base_worker and base_window, or none of them"),
    (params(("resnet", "worker0", RESNET_WINDOW), ("resnet", "worker0", "nope")), 404, "unknown run/worker/window"),
    (params(("resnet", "worker0", RESNET_WINDOW), ("resnet", "worker0", RESNET_WINDOW), group_by="x"), 400,
     "group_by must be one of"),
    (params(("broken", "worker0", "1"), ("resnet", "worker0", RESNET_WINDOW)), 422, "broken/"),
])
def test_errors(client, query, code, message):
    got, body = get(client, "compare", **query)
    assert got == code and message in body["error"], body


def test_api_ts_declares_only_fields_the_answer_has(client):
    """Every field api.ts's CompareResponse declares (followed into nested interfaces) is in a real
    answer (the check of tests/frontend/test_frontend_types.py, for this route)."""
    from test_frontend_types import API_TS, missing_fields, ts_interfaces

    interfaces = ts_interfaces(API_TS.read_text())
    code, body = get(client, "compare", **params(("ascend", "rank0", "default"), ("ascend", "rank1", "default")))
    assert code == 200 and body["memory"] and body["tree"]["children"] and body["communication"]
    assert "CompareResponse" in interfaces and missing_fields(body, "CompareResponse", interfaces, "compare") == []
    assert missing_fields({**body, "verdict": {}}, "CompareResponse", interfaces, "compare")  # it can fail


def test_without_a_baseline_the_default_pairing_is_said_and_is_the_named_answer(client):
    """Issue 42: one pairing everywhere (queries/pairing.py): window 2 of the run against the window before it,
    said in `pairing`; the figures are those of the same baseline named."""
    target = ("resnet", "worker0", RESNET_WINDOW_2)
    code, body = get(client, "compare", run=target[0], worker=target[1], window=target[2])
    assert code == 200, body
    assert body["pairing"]["default"] and body["pairing"]["rule"] == "previous window"
    assert "window against the window before it" in body["pairing"]["text"]
    assert body["base_window"]["window"] == RESNET_WINDOW
    code, named = get(client, "compare", **params(("resnet", "worker0", RESNET_WINDOW), target))
    assert code == 200 and named["pairing"] == {"rule": "named", "text": "the baseline named", "default": False}
    for key in ("verdict", "attribution", "base", "target", "contributors", "rows"):
        assert body[key] == named[key], key
