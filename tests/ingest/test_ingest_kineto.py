"""read_kineto / read_canning_window on real traces. Every expected number comes from a second,
independent reading of the same file (plain json + counting), never from the reader under test."""
import gzip
import json
import os
import shutil
from collections import Counter
from decimal import ROUND_HALF_EVEN, Decimal

import numpy as np
import pytest

from canning_tb.ingest.kineto.read import read_kineto
from canning_tb.ingest.table import NONE, EventTable, Kind
from canning_tb.ingest.window import read_canning_window
from conftest import fixture_path

KERNELS = (Kind.KERNEL, Kind.COMM_KERNEL)


def load(path, exact=False):
    """The independent reading (plain json; exact=True keeps every number's decimal text)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f, parse_float=Decimal) if exact else json.load(f)


def ns(v) -> int:
    """µs as written -> ns; a float goes through its shortest repr, i.e. the text the writer wrote."""
    return int((Decimal(repr(v) if isinstance(v, float) else v) * 1000).to_integral_value(ROUND_HALF_EVEN))


def xs(doc, cat=None):
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and (cat is None or e.get("cat", "").lower() == cat)]


def rows(t: EventTable, *kinds):
    return np.nonzero(np.isin(t.events["kind"], np.array(kinds, np.uint8)))[0]


def names(t, idx):
    return [t.strings[int(i)] for i in t.events["name"][idx]]


def mem_events(doc):
    return [e for e in doc["traceEvents"] if e.get("ph") == "i" and e.get("name") == "[memory]"]


def check_common(t: EventTable, doc, path):
    t.check()
    assert np.all(np.diff(t.events["ts"]) >= 0) and np.all(t.events["dur"] >= 0)
    assert t.meta.source_files == [str(path)]
    kernels = xs(doc, "kernel")
    k = rows(t, *KERNELS)
    assert len(k) == len(kernels)
    assert int(t.events["dur"][k].sum()) == sum(ns(e["dur"]) for e in kernels)
    assert sorted(names(t, k)) == sorted(e["name"] for e in kernels)
    comm = [e for e in kernels if "nccl" in e["name"].lower()]
    assert len(rows(t, Kind.COMM_KERNEL)) == len(comm)
    mem = mem_events(doc)
    assert len(t.memory["ts"]) == len(mem)
    assert int(t.memory["bytes"].sum()) == sum(e["args"]["Bytes"] for e in mem)
    assert sorted(t.memory["ts"].tolist()) == sorted(ns(e["ts"]) for e in mem)
    dist = doc.get("distributedInfo") or {}
    assert t.meta.rank == dist.get("rank", 0)
    assert t.meta.world_size == dist.get("world_size", 1)
    assert len(t) == len(xs(doc))  # every complete event is kept, unknown categories too
    props = doc.get("deviceProperties") or []
    assert [d["memory"] for d in t.meta.devices] == [p["totalGlobalMem"] for p in props]


def test_resnet50_2021_format_two_windows():
    for path in sorted(fixture_path("kineto", "resnet50_v100").glob("*.pt.trace.json.gz")):
        doc, t = load(path), read_kineto(str(path))
        check_common(t, doc, path)
        ops = xs(doc, "operator")
        assert len(rows(t, Kind.CPU_OP, Kind.USER_ANNOTATION)) == len(ops)
        steps = sorted(e["name"] for e in ops if e["name"].startswith("ProfilerStep#"))
        assert steps and sorted(names(t, rows(t, Kind.USER_ANNOTATION))) == steps
        assert len(rows(t, Kind.RUNTIME)) == len(xs(doc, "runtime"))
        memcpy = xs(doc, "memcpy")
        m = rows(t, Kind.MEMCPY)
        assert int(t.events["bytes"][m].sum()) == sum(e["args"]["bytes"] for e in memcpy)
        assert set(t.events["stream"][m].tolist()) == {e["args"]["stream"] for e in memcpy}
        # an op's shapes and call stack, as written
        op = next(e for e in ops if e["args"].get("Input Dims") and e["args"].get("Call stack")
                  and e["name"] == "aten::conv2d")
        i = np.nonzero((t.events["ts"] == ns(op["ts"])) & (t.events["name"] == t.strings.find("aten::conv2d")))[0]
        assert len(i) == 1
        assert t.strings[int(t.events["shapes"][i[0]])] == json.dumps(op["args"]["Input Dims"])
        assert t.strings[int(t.events["stack"][i[0]])] == op["args"]["Call stack"]
        assert t.events["external_id"][i[0]] == op["args"]["External id"]
        # 2021 memory events: no Addr
        assert np.all(t.memory["addr"] == NONE)
        devs = Counter(t.strings[int(d)] for d in t.memory["device"])
        want = Counter("CPU" if e["args"]["Device Type"] == 0 else f"cuda:{e['args']['Device Id']}"
                       for e in mem_events(doc))
        assert devs == want
        kern = xs(doc, "kernel")[0]
        k = np.nonzero((t.events["correlation"] == kern["args"]["correlation"]) & (t.events["kind"] == Kind.KERNEL))[0]
        assert len(k) == 1 and t.events["blocks"][k[0]] == int(np.prod(kern["args"]["grid"]))
        assert t.meta.start_ns <= int(t.events["ts"].min()) or t.meta.start_ns > 0
        # no distributedInfo at all: a single process, rank 0 without a warning
        assert "distributedInfo" not in doc and t.meta.rank == 0
        assert not any("rank" in p.message for p in t.problems)


def test_df_index_resolver_v100_rank1():
    path = fixture_path("hta", "df_index_resolver", "df_index_resolver.json.gz")
    doc, t = load(path), read_kineto(str(path))
    check_common(t, doc, path)
    assert t.meta.rank == 1 and t.meta.world_size == 2
    mem = mem_events(doc)
    assert len(mem) > 20000
    assert sorted(t.memory["addr"].tolist()) == sorted(e["args"]["Addr"] for e in mem)
    last = max(mem, key=lambda e: (e["ts"], e["args"]["Total Allocated"]))
    j = np.nonzero(t.memory["ts"] == ns(last["ts"]))[0]
    assert last["args"]["Total Allocated"] in t.memory["allocated"][j].tolist()
    assert last["args"]["Total Reserved"] in t.memory["reserved"][j].tolist()
    assert {t.strings[int(d)] for d in t.memory["device"]} == \
        {"CPU" if e["args"]["Device Type"] == 0 else f"cuda:{e['args']['Device Id']}" for e in mem}
    assert len(rows(t, Kind.CPU_OP)) == len(xs(doc, "cpu_op"))
    n_bmm = sum(1 for e in xs(doc, "cpu_op") if e["name"] == "aten::bmm")
    assert names(t, rows(t, Kind.CPU_OP)).count("aten::bmm") == n_bmm > 0
    rt = xs(doc, "cuda_runtime")
    assert sorted(t.events["correlation"][rows(t, Kind.RUNTIME)].tolist()) == sorted(e["args"]["correlation"] for e in rt)
    assert t.meta.devices[0]["compute_capability"] == "7.0" and t.meta.devices[0]["kind"] == "cuda"


def test_ns_resolution_timestamps_are_exact():
    path = fixture_path("hta", "ns_resolution_trace", "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
    doc, t = load(path, exact=True), read_kineto(str(path))
    check_common(t, doc, path)
    for cat, kind in (("gpu_memcpy", Kind.MEMCPY), ("cpu_op", Kind.CPU_OP), ("kernel", Kind.KERNEL)):
        want = sorted(ns(e["ts"]) for e in xs(doc, cat))
        got = sorted(t.events["ts"][rows(t, kind, Kind.COMM_KERNEL if kind == Kind.KERNEL else kind)].tolist())
        assert got == want
    frac = next(e for e in xs(doc, "cpu_op") if e["ts"] % 1 != 0)
    assert ns(frac["ts"]) % 1000 != 0
    assert ns(frac["ts"]) in t.events["ts"].tolist()
    assert t.meta.environment["displayTimeUnit"] == "ns"
    assert t.meta.environment["trace_id"] == doc["trace_id"]


def test_amd_rocm_trace():
    path = fixture_path("hta", "amd_trace", "mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    doc, t = load(path), read_kineto(str(path))
    check_common(t, doc, path)
    assert t.meta.devices[0]["kind"] == "rocm"
    assert t.meta.environment["baseTimeNanoseconds"] == str(doc["baseTimeNanoseconds"])
    assert t.meta.rank == 0 and not any("rank" in p.message for p in t.problems)  # no distributedInfo: one process
    g = xs(doc, "gpu_user_annotation")
    r = rows(t, Kind.GPU_USER_ANNOTATION)
    assert sorted(t.events["device"][r].tolist()) == sorted(e["pid"] for e in g)
    labels = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "process_name"}
    assert {k: v for k, v in t.meta.process_names.items() if k in labels} == labels


def test_cpu_only_rank34_of_300():
    path = fixture_path("hta", "cpu_only", "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    doc, t = load(path), read_kineto(str(path))
    check_common(t, doc, path)
    assert (t.meta.rank, t.meta.world_size) == (34, 300)
    ua = [e for e in xs(doc, "user_annotation")]
    assert sorted(names(t, rows(t, Kind.USER_ANNOTATION))) == sorted(e["name"] for e in ua)
    g = next(e for e in ua if e["args"].get("Input Dims"))
    i = next(r for r in rows(t, Kind.USER_ANNOTATION) if int(t.events["ts"][r]) == ns(g["ts"]))
    assert t.strings[int(t.events["shapes"][i])] == json.dumps(g["args"]["Input Dims"])
    span = next(e for e in xs(doc, "trace"))
    assert t.meta.start_ns == ns(span["ts"])
    end = [e for e in doc["traceEvents"] if e.get("name") == "Record Window End"]
    assert t.meta.end_ns == (ns(end[0]["ts"]) if end else ns(span["ts"]) + ns(span["dur"]))


def test_nccl_collective_args_bytes_and_group():
    path = fixture_path("hta", "nccl_parser_config", "nccl_data.json.gz")
    doc, t = load(path), read_kineto(str(path))
    check_common(t, doc, path)
    size = {"Float": 4, "Half": 2, "BFloat16": 2, "Double": 8, "Long": 8, "Int": 4}
    coll = [e for e in xs(doc, "kernel") if "Collective name" in e["args"]]
    assert coll
    c = rows(t, Kind.COMM_KERNEL)
    want = sorted(e["args"]["In msg nelems"] * size[e["args"]["dtype"]] for e in coll)
    assert sorted(t.events["bytes"][c].tolist()) == want
    groups = {f'{e["args"]["Process Group Name"]} ({e["args"]["Process Group Description"]})' for e in coll}
    assert {t.strings[int(g)] for g in t.events["group"][c]} == groups
    rpc = [e for e in xs(doc, "cpu_op") if e["name"] == "record_param_comms"]
    r = [i for i in rows(t, Kind.CPU_OP) if t.name(i) == "record_param_comms"]
    assert len(r) == len(rpc)
    assert sum(t.events["group"][i] >= 0 for i in r) == sum("Process Group Name" in e["args"] for e in rpc) > 0
    assert t.meta.environment["distributed.nccl_version"] == doc["distributedInfo"]["nccl_version"]


def test_dlrm_one_of_8_ranks():
    path = next(iter(sorted(fixture_path("param", "dlrm_8ranks").glob("worker3_*.json.gz"))))
    doc, t = load(path), read_kineto(str(path))
    check_common(t, doc, path)
    assert (t.meta.rank, t.meta.world_size) == (3, 8)
    nccl = [e for e in xs(doc, "kernel") if e["name"].startswith("ncclKernel")]
    assert len(rows(t, Kind.COMM_KERNEL)) == len(nccl) > 0
    threads = {f'{e["pid"]}:{e["tid"]}': e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
    assert {k: t.meta.thread_names[k] for k in threads} == threads


def test_plain_json_reads_like_gzip(tmp_path):
    src = fixture_path("param", "dlrm_8ranks", "worker0_step_12.1694128201545.pt.trace.json.gz")
    plain = tmp_path / "w.pt.trace.json"
    plain.write_bytes(gzip.decompress(src.read_bytes()))
    a, b = read_kineto(str(src)), read_kineto(str(plain))
    for k in a.events:
        if k not in ("name", "cat", "shapes", "stack", "group"):
            assert np.array_equal(a.events[k], b.events[k]), k
    assert names(a, np.arange(len(a))) == names(b, np.arange(len(b)))


@pytest.mark.parametrize("parts", [("hta", "nccl_parser_config", "nccl_data.json.gz"),
                                   ("hta", "ns_resolution_trace", "rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")])
def test_small_chunks_give_the_same_table(tmp_path, monkeypatch, parts):
    """Chunk cuts land everywhere (one-line JSON too; exact ns mode switched on mid-file): the
    table must not depend on them."""
    from canning_tb.ingest import _json
    src = fixture_path(*parts)
    one_line = tmp_path / "one.json"
    one_line.write_bytes(gzip.decompress(src.read_bytes()).replace(b"\n", b" "))  # no line layout
    whole = read_kineto(str(src))
    monkeypatch.setattr(_json, "CHUNK", 997)
    for path in (src, one_line):
        small = read_kineto(str(path))
        for k in whole.events:
            assert np.array_equal(whole.events[k], small.events[k]), k
        assert np.array_equal(whole.memory["ts"], small.memory["ts"])


def test_fresh_torch_trace(fresh_trace):
    doc, t = load(fresh_trace), read_kineto(fresh_trace)
    check_common(t, doc, fresh_trace)
    steps = sorted(e["name"] for e in xs(doc, "user_annotation") if e["name"].startswith("ProfilerStep#"))
    assert len(steps) == 2
    ua = names(t, rows(t, Kind.USER_ANNOTATION))
    assert sorted(n for n in ua if n.startswith("ProfilerStep#")) == steps
    ops = xs(doc, "cpu_op")
    assert len(rows(t, Kind.CPU_OP)) == len(ops)
    assert len(rows(t, Kind.PYTHON_FUNCTION)) == len(xs(doc, "python_function"))
    conv = [e for e in ops if e["name"] == "aten::conv2d"]
    r = [i for i in rows(t, Kind.CPU_OP) if t.name(i) == "aten::conv2d"]
    assert len(r) == len(conv) > 0
    assert sorted(t.strings[int(t.events["shapes"][i])] for i in r) == \
        sorted(json.dumps(e["args"]["Input Dims"]) for e in conv)
    # stacks come from the python_function events that enclose each op
    stacks = [t.strings[int(t.events["stack"][i])] for i in r]
    assert all(s and "_gen_trace.py(" in s and ": forward" in s for s in stacks)
    assert all(not s.startswith("<built-in") for s in stacks)
    mem = mem_events(doc)
    assert len(mem) > 0 and {t.strings[int(d)] for d in t.memory["device"]} == {"CPU"}
    assert sorted(t.memory["addr"].tolist()) == sorted(e["args"]["Addr"] for e in mem)
    end = next(e for e in doc["traceEvents"] if e.get("name") == "Record Window End")
    assert t.meta.end_ns == ns(end["ts"])
    assert t.meta.environment["with_stack"] == "1"
    # the args column: empty (NONE) exactly for the host events whose record has neither "Input type" nor
    # "Concrete Inputs", by a second reading of the file
    host = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]
    want = sorted((ns(e["ts"]), e["name"], bool(e.get("args", {}).get("Input type") or
                                                 e.get("args", {}).get("Concrete Inputs"))) for e in host)
    kinds = (Kind.CPU_OP, Kind.USER_ANNOTATION)
    got = sorted((int(t.events["ts"][i]), t.name(i), int(t.events["args"][i]) != NONE)
                 for k in kinds for i in rows(t, k))
    assert got == want and 0 < sum(w[2] for w in want) < len(want)


def test_cache_round_trip(fresh_trace, tmp_path):
    t = read_kineto(fresh_trace)
    t.save(str(tmp_path / "c"))
    u = EventTable.load(str(tmp_path / "c"))
    for k in t.events:
        assert np.array_equal(t.events[k], u.events[k]), k
    assert u.strings.values == t.strings.values and u.meta.process_names == t.meta.process_names


def test_canning_window(fresh_trace, tmp_path):
    stem = "rank3.host.42.179000000000000001"
    trace = tmp_path / f"{stem}.pt.trace.json.gz"
    shutil.copy(fresh_trace, trace)
    man = {"format_version": 1, "kind": "kineto", "worker": "rank3.host.42", "window": 1, "rank": 3,
           "world_size": 4, "local_rank": 1, "host": "host", "pid": 42, "steps": [2, 3],
           "devices": [{"kind": "cpu", "name": "x86_64", "index": 0, "memory": 1 << 34}],
           "versions": {"torch": "2.13.0", "python": "3.11"}, "settings": {"record_shapes": True},
           "files": [{"name": trace.name, "bytes": os.path.getsize(trace)}], "manifest": f"{stem}.canning.json"}
    mp = tmp_path / f"{stem}.canning.json"
    mp.write_text(json.dumps(man))
    t = read_canning_window(str(mp))
    ref = read_kineto(str(trace))
    assert len(t) == len(ref)
    m = t.meta
    assert (m.format, m.rank, m.world_size, m.local_rank, m.pid, m.host) == ("canning", 3, 4, 1, 42, "host")
    assert m.worker == "rank3.host.42" and m.devices[0]["memory"] == 1 << 34
    assert m.environment["versions.torch"] == "2.13.0" and m.environment["settings.record_shapes"] == "true"
    assert m.environment["steps"] == "[2, 3]"
    assert str(mp) in m.source_files and str(trace) in m.source_files
    assert not any("rank" in p.message for p in t.problems)
