"""Window figures, per-rank rows, the run summary, the memory-range query and the matrix cells
(analysis/summary.py, analysis/memory_range.py, analysis/cluster.py), without HTTP.

Expected numbers: by hand on small digests built here, and on the real fixtures from a second
reading of the raw trace with json and plain loops (or the old TensorBoard plugin's own figures).
"""
import collections
import gzip
import json
from decimal import Decimal

import pytest

from conftest import fixture_path
from test_analysis_fixtures import hand_steps, load

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.cluster import analyse_ranks, matrix_cells, rank_ids
from canning_tb.analysis.memory_range import memory_range
from canning_tb.analysis.summary import (has_device_work, kernel_total_ns, rank_row, run_summary,
                                          window_figures)
from canning_tb.store import Store


def ns(value) -> int:
    return int((Decimal(value) * 1000).to_integral_value())


def raw_events(path):
    with gzip.open(path, "rt") as f:
        return json.load(f, parse_float=Decimal)["traceEvents"]


# -- by hand --------------------------------------------------------------------------------------


def small_digest(device_self=(("aten::mm", 300), ("aten::add", 100), ("ProfilerStep#1", 900))) -> pb.Digest:
    d = pb.Digest()
    d.window.rank = 3
    for number, dur in ((1, 1000), (2, 3000)):
        d.steps.add(number=number, start_ns=number * 10_000, dur_ns=dur)
    d.average.CopyFrom(pb.Breakdown(total_ns=2000, compute_ns=500, overlapped_ns=300, communication_ns=200,
                                    dataloader_ns=100, host_ns=900))
    for name, ns_ in device_self:
        d.ops_by_name.add(name=name, calls=1, host_self_ns=10 * ns_ + 1, device_self_ns=ns_, device_total_ns=ns_)
    d.memory.add(device="CPU", peak_allocated_bytes=5000, capacity_bytes=-1)
    d.memory.add(device="cuda:0", peak_allocated_bytes=700, capacity_bytes=1000)
    d.memory.add(device="cuda:1", peak_allocated_bytes=900, capacity_bytes=1000)
    d.kernels_by_name.add(name="k1", calls=2, total_ns=250)
    d.kernels_by_name.add(name="k2", calls=1, total_ns=150)
    return d


def test_window_figures_by_hand():
    f = window_figures(small_digest())
    assert f["steps"] == 2 and f["total_step_ns"] == 4000 and f["average_step_ns"] == 2000
    assert f["compute_share"] == pytest.approx(800 / 2000)
    assert f["comm_not_hidden_share"] == pytest.approx(200 / 2000)
    assert f["dataloader_share"] == pytest.approx(100 / 2000)
    # devices other than CPU first, in digest order; CPU last
    assert [m["device"] for m in f["memory"]] == ["cuda:0", "cuda:1", "CPU"]
    assert f["memory"][0] == {"device": "cuda:0", "peak_bytes": 700, "capacity_bytes": 1000}
    # ProfilerStep#1 (900) is not an operator: aten::mm 300 of 300 + 100
    assert f["slowest_op"] == {"name": "aten::mm", "ns": 300, "metric": "device_self_ns", "share": 0.75}


def test_figures_without_steps_or_device():
    d = small_digest(device_self=(("aten::mm", 0), ("aten::add", 0)))
    del d.kernels_by_name[:]
    d.average.CopyFrom(pb.Breakdown(total_ns=0, host_ns=0))
    f = window_figures(d)
    assert f["compute_share"] is None and f["comm_not_hidden_share"] is None and f["dataloader_share"] is None
    assert not has_device_work(d)
    # no device work: host self time (10 x 0 + 1 each): a tie resolved by digest order
    assert f["slowest_op"] == {"name": "aten::mm", "ns": 1, "metric": "host_self_ns", "share": 0.5}
    assert window_figures(pb.Digest())["slowest_op"] is None and window_figures(pb.Digest())["memory"] == []


@pytest.mark.parametrize("field,value", [("kernels", True), ("memcpy_ns", 5), ("overlapped_ns", 5),
                                         ("device_total_ns", 5), ("none", 0)])
def test_has_device_work_one_definition(field, value):
    d = pb.Digest()
    d.ops_by_name.add(name="aten::mm", host_self_ns=10)
    if field == "kernels":
        d.kernels_by_name.add(name="k", total_ns=1)
    elif field == "device_total_ns":
        d.ops_by_name[0].device_total_ns = value
    elif field != "none":
        setattr(d.average, field, value)
    assert has_device_work(d) is (field != "none")


def test_rank_row_and_run_summary_by_hand():
    row = rank_row(small_digest())
    assert row == {"steps": 2, "step_ns": 2000, "compute_share": pytest.approx(0.4),
                   "comm_not_hidden_share": pytest.approx(0.1), "memory_device": "cuda:1",
                   "memory_peak_bytes": 900, "memory_capacity_bytes": 1000, "slowest_op": "aten::mm",
                   "slowest_op_ns": 300, "slowest_op_metric": "device_self_ns"}
    rows = [{"rank": 0, **row},
            {"rank": 1, **row, "step_ns": 2500, "compute_share": -1.0, "memory_peak_bytes": 100,
             "slowest_op": "aten::bmm", "slowest_op_ns": 700},
            {"rank": 2, **row, "step_ns": 1500, "memory_peak_bytes": -1}]
    s = run_summary(rows)
    assert s["ranks"] == 3
    assert s["step_ns"] == {"min": 1500, "min_rank": 2, "max": 2500, "max_rank": 1}
    assert s["compute_share"] == {"min": pytest.approx(0.4), "min_rank": 0, "max": pytest.approx(0.4), "max_rank": 0}
    assert s["memory_peak_bytes"] == {"min": 100, "min_rank": 1, "max": 900, "max_rank": 0}
    assert s["slowest_op"] == {"name": "aten::bmm", "ns": 700, "rank": 1, "metric": "device_self_ns"}
    assert run_summary([]) == {"ranks": 0, "step_ns": None, "compute_share": None,
                               "comm_not_hidden_share": None, "memory_peak_bytes": None, "slowest_op": None}


def test_kernel_total_by_hand():
    assert kernel_total_ns(small_digest()) == 400


def memory_with_events() -> pb.DeviceMemory:
    m = pb.DeviceMemory(device="cuda:0", events_truncated=True)
    for op, size, alloc, free in (("a", 100, -1, 50), ("a", 300, 10, 20), ("a", 50, 15, 90),
                                  ("b", 1000, 40, -1), ("b", 10, 60, 70), ("c", 7, 95, 99)):
        m.events.add(op=op, bytes=size, alloc_ns=alloc, free_ns=free)
    return m


def test_memory_range_by_hand():
    m = memory_with_events()
    whole = memory_range(m)
    assert len(whole["events"]) == 6 and whole["events_total"] == 6 and whole["events_truncated"] is True
    # whole window: every event; freed = freed at all
    assert whole["ops"] == [{"name": "b", "allocations": 2, "bytes": 1010, "max_bytes": 1000, "freed": 1},
                            {"name": "a", "allocations": 3, "bytes": 450, "max_bytes": 300, "freed": 3},
                            {"name": "c", "allocations": 1, "bytes": 7, "max_bytes": 7, "freed": 1}]
    # [10, 60]: allocated at 10, 15, 40, 60 (the one from before the window is not); freed inside: 20 only
    part = memory_range(m, 10, 60)
    assert [(e.op, e.alloc_ns) for e in part["events"]] == [("a", 10), ("a", 15), ("b", 40), ("b", 60)]
    assert part["events_total"] == 6
    assert part["ops"] == [{"name": "b", "allocations": 2, "bytes": 1010, "max_bytes": 1000, "freed": 0},
                           {"name": "a", "allocations": 2, "bytes": 350, "max_bytes": 300, "freed": 1}]
    # open on one side
    assert [e.alloc_ns for e in memory_range(m, 61, None)["events"]] == [95]
    assert [e.alloc_ns for e in memory_range(m, None, 10)["events"]] == [10]
    assert memory_range(m, 100, 200)["ops"] == []


def test_matrix_cells_by_hand():
    matrix = [{"src": 0, "dst": 1, "transport": "HCCS", "bytes": 100, "time_ns": 10, "bandwidth_gbps": 10.0},
              {"src": 0, "dst": 1, "transport": "PCIE", "bytes": 50, "time_ns": -1, "bandwidth_gbps": -1.0},
              {"src": 1, "dst": 0, "transport": "ring", "bytes": 40, "time_ns": 0, "bandwidth_gbps": -1.0}]
    assert matrix_cells(matrix) == [
        {"src": 0, "dst": 1, "bytes": 150, "time_ns": 10, "transports": ["HCCS", "PCIE"], "groups": [],
         "bandwidth_gbps": 15.0},
        {"src": 1, "dst": 0, "bytes": 40, "time_ns": 0, "transports": ["ring"], "groups": [], "bandwidth_gbps": None}]


def test_rank_ids_by_position_when_ranks_repeat():
    a, b = pb.Digest(), pb.Digest()
    a.window.rank, b.window.rank = 5, 2
    assert rank_ids([a, b]) == [5, 2]
    b.window.rank = 5
    assert rank_ids([a, b]) == [0, 1]


# -- real profiles ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def resnet(tmp_path_factory):
    folder = fixture_path("kineto", "resnet50_v100")
    store = Store(str(folder), cache_dir=str(tmp_path_factory.mktemp("cache")))
    return store, folder


@pytest.mark.parametrize("window,utilization", [("1623143089861", 55.51), ("1623143566756", 63.61)])
def test_resnet_compute_share_is_the_old_plugins_gpu_utilization(resnet, window, utilization):
    """No communication in this run: device compute time over the step time of all six steps is what
    the old TensorBoard plugin printed as "GPU Utilization" for these two windows (SOURCES.md). Our
    average leaves out the last step, distorted by the window's end (analysis/steps.py): the
    figure is the same ratio over the steps it keeps."""
    store, _ = resnet
    d = store.digest(".", "worker0", window)
    f = window_figures(d)

    def busy_share(steps):
        return sum(s.breakdown.compute_ns + s.breakdown.overlapped_ns for s in steps) / sum(s.dur_ns for s in steps)

    assert round(100 * busy_share(d.steps), 2) == utilization
    assert d.steps[-1].distorted and list(d.average_steps) == [s.number for s in d.steps[:-1]]
    assert f["compute_share"] == pytest.approx(busy_share(d.steps[:-1]), abs=1e-5)  # the average rounds to ns
    assert f["comm_not_hidden_share"] == 0.0


def test_resnet_figures_against_the_raw_trace(resnet):
    store, folder = resnet
    window = "1623143089861"
    d = store.digest(".", "worker0", window)
    events = raw_events(folder / f"worker0.{window}.pt.trace.json.gz")
    f = window_figures(d)
    steps = hand_steps(load(folder / f"worker0.{window}.pt.trace.json.gz")[1])  # the step rule, by hand
    assert f["steps"] == len(steps) == 6
    assert f["total_step_ns"] == sum(dur for _, _, dur in steps)
    # the last step drains the device backlog at the window's end: left out of the average
    assert [x.number for x in d.steps if x.distorted] == [d.steps[-1].number]
    assert f["average_step_ns"] == round(sum(dur for _, _, dur in steps[:-1]) / 5)
    # kernels: every Kernel event's duration
    kernels = [e for e in events if e.get("cat") == "Kernel"]
    assert kernel_total_ns(d) == sum(ns(e["dur"]) for e in kernels)
    # the slowest operator: device time (kernels, memcpy, memset) joined to the operator through
    # the external id, ProfilerStep# ranges excluded
    op_of = {}
    for e in events:
        if e.get("cat") == "Operator":
            op_of.setdefault(e["args"]["External id"], e["name"])
    device_self = collections.Counter()
    for e in events:
        if e.get("cat") in ("Kernel", "Memcpy", "Memset") and op_of.get(e["args"].get("external id")):
            device_self[op_of[e["args"]["external id"]]] += ns(e["dur"])
    ranked = [(n, v) for n, v in device_self.most_common() if not n.startswith("ProfilerStep#")]
    top_name, top_ns = ranked[0]
    assert f["slowest_op"] == {"name": top_name, "ns": top_ns, "metric": "device_self_ns",
                               "share": pytest.approx(top_ns / sum(v for _, v in ranked), rel=1e-12)}
    # memory: GPU first; its peak = the highest running sum of the [memory] Bytes on the GPU
    running, peak = 0, 0
    for e in sorted((e for e in events if e.get("name") == "[memory]" and e["args"]["Device Type"] == 1),
                    key=lambda e: e["ts"]):
        running += e["args"]["Bytes"]
        peak = max(peak, running)
    assert [m["device"] for m in f["memory"]] == ["cuda:0", "CPU"] and f["memory"][0]["peak_bytes"] == peak
    row = rank_row(d)
    assert (row["memory_device"], row["memory_peak_bytes"], row["slowest_op"]) == ("cuda:0", peak, top_name)


def innermost_op(ops_by_thread, thread, ts):
    """The innermost operator of `thread` running at `ts` (plain scan of the nested ranges)."""
    best = None
    for start, end, name in ops_by_thread.get(thread, ()):
        if start <= ts < end and (best is None or start >= best[0]):
            best = (start, end, name)
    return best[2] if best else None


def test_memory_range_against_the_raw_trace(tmp_path):
    """CPU allocations of a real V100 trace (620, none dropped) in the middle third of the window:
    allocation events paired with their frees by address, attributed to the innermost operator."""
    folder = fixture_path("hta", "df_index_resolver")
    store = Store(str(folder), cache_dir=str(tmp_path))
    d = store.digest(".", "df_index_resolver", "default")
    (mem,) = [m for m in d.memory if m.device == "CPU"]
    assert not mem.events_truncated
    events = raw_events(folder / "df_index_resolver.json.gz")
    cpu = sorted((e for e in events if e.get("name") == "[memory]" and e["args"].get("Device Type") == 0),
                 key=lambda e: e["ts"])
    ops = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            ops[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e["name"]))
    pairs, open_at = [], {}
    for e in cpu:
        if e["args"]["Bytes"] > 0:
            open_at[e["args"]["Addr"]] = len(pairs)
            pairs.append([e, None])
        elif e["args"]["Addr"] in open_at:
            pairs[open_at.pop(e["args"]["Addr"])][1] = e
    t0, t1 = d.window.start_ns, d.window.end_ns
    lo, hi = t0 + (t1 - t0) // 3, t0 + 2 * (t1 - t0) // 3
    expect = collections.defaultdict(lambda: {"allocations": 0, "bytes": 0, "max_bytes": 0, "freed": 0})
    for alloc, free in pairs:
        if not lo <= ns(alloc["ts"]) <= hi:
            continue
        row = expect[innermost_op(ops, (alloc["pid"], alloc["tid"]), ns(alloc["ts"]))]
        row["allocations"] += 1
        row["bytes"] += alloc["args"]["Bytes"]
        row["max_bytes"] = max(row["max_bytes"], alloc["args"]["Bytes"])
        row["freed"] += free is not None and lo <= ns(free["ts"]) <= hi
    got = memory_range(mem, lo, hi)
    assert sum(r["allocations"] for r in expect.values()) > 10  # the range holds a real sample
    assert {r["name"]: {k: v for k, v in r.items() if k != "name"} for r in got["ops"]} == dict(expect)
    assert len(got["events"]) == sum(r["allocations"] for r in expect.values())
    assert got["events_total"] == len(pairs) == len(mem.events)


def test_matrix_cells_of_the_ascend_links(tmp_path):
    """Two Ascend ranks: the "<op>-total" cells of both ranks' communication_matrix.json (CANN's sums over
    the step's calls; read here with json, sizes in decimal MB and times in ms as CANN writes them)
    summed per (src, dst) by hand: the heat map's cells."""
    folder = fixture_path("ascend", "level1")
    store = Store(str(folder), cache_dir=str(tmp_path))
    result = analyse_ranks([store.digest(".", f"rank{rank}", "default") for rank in (0, 1)])
    by_pair = collections.defaultdict(lambda: [0.0, 0.0, set(), 0])  # bytes, ns, transports, cells
    for rank in (0, 1):
        raw = json.loads((folder / f"rank{rank}_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json")
                         .read_text())
        for step in raw.values():
            for kind in step.values():
                for key, links in kind.items():
                    if not key.split("@")[0].endswith("-total"):
                        continue
                    for pair, link in links.items():
                        cell = by_pair[tuple(int(x) for x in pair.split("-"))]
                        cell[0] += link["Transit Size(MB)"] * 1e6
                        cell[1] += link["Transit Time(ms)"] * 1e6
                        cell[2].add(link["Transport Type"])
                        cell[3] += 1
    assert sorted((c["src"], c["dst"]) for c in result["matrix_cells"]) == sorted(by_pair) and len(by_pair) >= 4
    for cell in result["matrix_cells"]:
        size, time_ns, transports, cells = by_pair[(cell["src"], cell["dst"])]
        assert abs(cell["bytes"] - size) <= cells and abs(cell["time_ns"] - time_ns) <= cells  # each cell rounds
        assert set(cell["transports"]) == transports
        # bandwidth = bytes / time (GB/s = bytes per ns) of the cell's figures just checked
        assert cell["bandwidth_gbps"] == (pytest.approx(cell["bytes"] / cell["time_ns"]) if time_ns else None)
