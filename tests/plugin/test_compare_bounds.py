"""/compare bounded whatever the windows hold (issue 23 item 5): a window of 200,000 operator names
against itself answers one page of the table within a stated time and size (before: 104.6 MB after
26 s), the next page without comparing again, and a call stack of 500,000 frames answers (before: a
500 RecursionError). The windows are our handler's format with their digests written at the source
(what a big job's handler leaves), so the route reads digests only, as it does for any window."""
import json
import time

import pytest
from tensorboard.backend import application
from werkzeug.test import Client

from canning_tb.analysis import digest_pb2
from canning_tb.analysis.digest import SCHEMA_VERSION, analysis_revision
from canning_tb.queries import compare as compare_routes
from test_plugin_routes import make_plugin

NAMES = 200_000
FRAMES = 500_000
ANSWER_BYTES = 2 << 20  # one page of 1,000 rows and the rest of the answer
# CPU seconds of this process (the plugin runs in it), so that the bound holds under any load of the
# machine; 27.6 s of CPU before (and 134.5 MB), about 13 s now, of which the comparison of 200,000 rows
FIRST_ANSWER_CPU_S = 25.0
NEXT_PAGE_CPU_S = 2.0


def write_window(run, digest, name="w") -> None:
    """A window of our handler: a small trace, its manifest (with the trace's size) and its digest."""
    run.mkdir(parents=True)
    trace = json.dumps({"traceEvents": [{"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 10, "pid": 1,
                                         "tid": 1, "cat": "user_annotation"}]}).encode()
    (run / f"{name}.1.pt.trace.json").write_bytes(trace)
    (run / f"{name}.1.digest.pb").write_bytes(digest.SerializeToString())
    (run / f"{name}.1.canning.json").write_text(json.dumps({
        "format_version": 1, "worker": name, "window": 1, "rank": 0,
        "files": [{"name": f"{name}.1.pt.trace.json", "bytes": len(trace)}]}))


def digest_of(ops: list[tuple[str, str]], step_ns: int) -> digest_pb2.Digest:
    # made by this analysis code: a digest at the source of other code would be made again from the trace
    d = digest_pb2.Digest(schema_version=SCHEMA_VERSION, analysis_revision=analysis_revision())
    d.window.start_ns, d.window.end_ns, d.window.rank = 0, step_ns, 0
    d.steps.add(number=1, start_ns=0, dur_ns=step_ns)
    d.average.total_ns = d.average.host_ns = step_ns
    for i, (name, stack) in enumerate(ops):
        for rows in (d.ops_by_name, d.ops_by_stack):
            op = rows.add(name=name, calls=1, host_self_ns=1000 + i, host_total_ns=1000 + i)
            if rows is d.ops_by_stack and stack:
                op.call_stack, op.has_call_stack = stack, True
    return d


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("bounds")
    many = [(f"op_{i:06d}", "") for i in range(NAMES)]
    write_window(root / "many", digest_of(many, 10 ** 9))
    deep = ";".join(f"frame_{i}.py(1): f{i}" for i in range(FRAMES))
    write_window(root / "deep_a", digest_of([("aten::mm", deep)], 10 ** 6))
    write_window(root / "deep_b", digest_of([("aten::mm", deep), ("aten::add", deep)], 2 * 10 ** 6))
    return Client(application.TensorBoardWSGI([make_plugin(root)]))


def ask(client, base: str, target: str, **more):
    query = {"base_run": base, "base_worker": "w", "base_window": "1", "run": target, "worker": "w", "window": "1",
             **more}
    start, cpu = time.monotonic(), time.process_time()
    resp = client.get("/data/plugin/canning/compare", query_string=query)
    data = resp.get_data()
    assert time.monotonic() - start < 600
    return resp.status_code, data, time.process_time() - cpu


def test_200k_names_answer_a_page_within_a_bound(client):
    getattr(compare_routes, "_kept", {}).clear()  # compared afresh
    code, data, took = ask(client, "many", "many", search="op_19", sort="key", order="desc")
    body = json.loads(data)
    print(f"/compare of {NAMES} names: {took:.1f} s of CPU, {len(data) / 1e6:.2f} MB; ", end="")
    assert code == 200, body
    assert took < FIRST_ANSWER_CPU_S and len(data) < ANSWER_BYTES
    assert body["all_rows"] == NAMES and body["total"] == 10_000  # op_190000 .. op_199999
    assert [r["key"] for r in body["rows"][:2]] == ["op_199999", "op_199998"] and len(body["rows"]) == 1000
    assert body["tables"]["operators"] == NAMES
    code, data, took = ask(client, "many", "many", search="op_19", sort="key", order="desc", offset=9000)
    print(f"the last page {took:.2f} s of CPU")
    assert code == 200 and took < NEXT_PAGE_CPU_S
    assert json.loads(data)["rows"][-1]["key"] == "op_190000"
    assert len(json.loads(data)["tree"]["children"]) <= 101  # the tree is bounded too


def test_a_500000_frame_stack_is_answered(client):
    code, data, _ = ask(client, "deep_a", "deep_b")
    assert code == 200, data[:300]
    body = json.loads(data)
    node, depth = body["tree"], 0
    while node["children"]:
        node, depth = node["children"][0], depth + 1
    assert depth <= 66 and node["kind"] == "op"
    # the frames past the bound are folded into one, and the sums still hold
    assert body["tree"]["target_ns"] == pytest.approx(sum(c["target_ns"] for c in body["tree"]["children"]))
    contrib = body["contributors"]
    assert sum(c["delta_ns"] for c in contrib["by_category"]) == pytest.approx(contrib["step_delta_ns"])
    assert contrib["step_delta_ns"] == pytest.approx(10 ** 6)
