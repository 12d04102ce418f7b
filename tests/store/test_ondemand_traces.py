"""Kineto on-demand traces, as dynolog's `dyno gputrace` has each process write them
(`<log_file>_<pid>.json`, facebookincubator/dynolog cli/src/commands/gputrace.rs): listed as windows with
their rank, which libkineto writes after the events, at the end of the file (pytorch/kineto
libkineto/src/output_json.cpp, addOnDemandDistMetadata), or else the rank in the file's name.

No dynolog daemon runs here: the events come from a real torch.profiler run on the CPU, laid out as
output_json.cpp's on-demand path writes the file (head, events, then distributedInfo and traceName).
"""
import json

import pytest

from canning_tb.store import Store

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    path = tmp_path_factory.mktemp("kineto") / "plain.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        x = torch.randn(16, 16)
        for _ in range(150):
            x = (x @ x).tanh()
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert "distributedInfo" not in trace  # one process, no process group: the rank must come from elsewhere
    return trace


def write_on_demand(path, trace, rank=None):
    """The file as libkineto's on-demand path writes it: distributedInfo (NCCL's default group) last."""
    head = {k: v for k, v in trace.items() if k not in ("traceEvents", "traceName")}
    text = json.dumps(head)[:-1] + ', "traceEvents": ' + json.dumps(trace["traceEvents"], indent=1)
    if rank is not None:
        text += (f', "distributedInfo": {{"backend": "nccl", "rank": {rank}, "world_size": 4, "pg_count": 1, '
                 f'"pg_config": [{{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", '
                 f'"pg_size": 4, "ranks": [0, 1, 2, 3]}}], "nccl_version": "unknown"}}')
    path.write_text(text + f', "traceName": "{path}"}}')
    return path


def test_on_demand_traces_are_listed_with_the_rank_written_at_their_end(tmp_path, events):
    run = tmp_path / "dyno"
    run.mkdir()
    big = write_on_demand(run / "trace_41007.json", events, rank=3)
    assert big.stat().st_size > 3 * 65536 and big.read_text().rfind('"distributedInfo"') > big.stat().st_size - 65536
    write_on_demand(run / "trace_41008.json", events, rank=1)
    write_on_demand(run / "rank2_trace_41009.json", events)  # no distributedInfo (gloo, or an old libkineto)
    store = Store(str(tmp_path))
    assert store.runs() == ["dyno"]
    ranks = {w.name: w.rank for w in store.workers("dyno")}
    assert ranks == {"trace_41007": 3, "trace_41008": 1, "rank2_trace_41009": 2}
    (win,) = store.windows("dyno", "trace_41007")
    assert store.digest("dyno", "trace_41007", win.id).window.rank == 3  # the reader agrees with discovery
