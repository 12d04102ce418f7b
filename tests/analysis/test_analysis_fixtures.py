"""The analysis on real profiler output, checked against independent computations.

Every expected number here comes from reading the raw fixture file with json / csv and plain
Python loops (no canning_tb code), per the rule named in each test. Times in the Kineto
fixtures are integer µs (or µs with 3 decimals), so `ns()` below is exact and the tolerance
is 0 unless a test says otherwise (and why).
"""
import csv
import glob
import gzip
import json
from collections import Counter, defaultdict
from decimal import Decimal

import pytest

from _gloo_trace import one_rank_gloo_trace
from conftest import fixture_path, read_db

from canning_tb.analysis import report
from canning_tb.analysis.build import build_digest
from canning_tb.util.digest_json import to_plain
from canning_tb.analysis.cluster import analyse_ranks

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}


def load(path):
    op = gzip.open if str(path).endswith(".gz") else open
    with op(path, "rt") as f:
        d = json.load(f, parse_float=Decimal)
    return d, [e for e in d["traceEvents"] if e.get("ph") == "X"]


def ns(v) -> int:
    return int((Decimal(v) * 1000).to_integral_value())


def merge(iv):
    """Union of (start, end) pairs as a sorted list of disjoint pairs (plain loop)."""
    out = []
    for s, e in sorted(x for x in iv if x[1] > x[0]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def intersect(a, b):
    """Intersection of two merged lists (two-pointer walk)."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if e > s:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def length_in(iv, windows):
    tot = 0
    for s, e in merge(iv):
        for a, b in windows:
            tot += max(0, min(e, b) - max(s, a))
    return tot


def read_kineto(path):
    mod = pytest.importorskip("canning_tb.ingest.kineto.read")
    return mod.read_kineto(str(path))


def read_ascend(path):
    mod = pytest.importorskip("canning_tb.ingest.ascend.read")
    return mod.read_ascend(str(path))


def hand_steps(events):
    """Step spans by the rule of analysis/steps.py, recomputed with loops over the raw events:
    [start of ProfilerStep#N, max(its host end, end of the device events launched inside it)),
    capped at the next step's start."""
    steps = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), int(e["name"].split("#")[1]))
                   for e in events if e["name"].startswith("ProfilerStep#") and e.get("cat", "").lower() != "gpu_user_annotation")
    launch = {}
    for e in events:
        if e.get("cat", "").lower() in ("runtime", "cuda_runtime", "cuda_driver"):
            c = e.get("args", {}).get("correlation")
            if c is not None:
                launch[c] = ns(e["ts"])
    ends = [h for _, h, _ in steps]
    for e in events:
        if e.get("cat", "").lower() not in GPU_CATS:
            continue
        lt = launch.get(e.get("args", {}).get("correlation"), ns(e["ts"]))
        for i, (s, h, _) in enumerate(steps):
            if s <= lt < h:
                ends[i] = max(ends[i], ns(e["ts"]) + ns(e["dur"]))
    for i in range(len(steps) - 1):
        ends[i] = min(ends[i], steps[i + 1][0])
    return [(n, s, e - s) for (s, _, n), e in zip(steps, ends)]


BREAKDOWN = ("compute_ns", "overlapped_ns", "communication_ns", "memcpy_ns", "memset_ns", "device_wait_ns",
             "runtime_ns", "dataloader_ns", "host_ns", "idle_ns")


def assert_sums(d):
    for s in d.steps:
        assert sum(getattr(s.breakdown, f) for f in BREAKDOWN) == s.breakdown.total_ns == s.dur_ns
        assert all(getattr(s.breakdown, f) >= 0 for f in BREAKDOWN)


# ------------------------------------------------------------------ kineto / resnet50 on V100


@pytest.fixture(scope="module")
def resnet():
    p = sorted(glob.glob(str(fixture_path("kineto", "resnet50_v100") / "*.pt.trace.json.gz")))[0]
    raw, events = load(p)
    return build_digest(read_kineto(p)), events


def test_resnet_steps(resnet):
    d, events = resnet
    expect = hand_steps(events)
    assert len(expect) == 6
    assert [(s.number, s.start_ns, s.dur_ns) for s in d.steps] == expect
    assert_sums(d)


def test_resnet_top_op_by_host_self(resnet):
    d, events = resnet
    # self = dur - direct children's dur (runtime calls among them, as key_averages()), per thread,
    # with a plain stack over host ops
    ops = [e for e in events if e.get("cat", "").lower() in ("operator", "cpu_op", "user_annotation", "runtime",
                                                             "cuda_runtime", "cuda_driver")]
    by_thread = defaultdict(list)
    for e in ops:
        by_thread[(e["pid"], e["tid"])].append(e)
    self_by_name = Counter()
    for evs in by_thread.values():
        evs.sort(key=lambda e: (ns(e["ts"]), -ns(e["dur"])))
        stack = []  # [end, index]
        selfs = [ns(e["dur"]) for e in evs]
        for i, e in enumerate(evs):
            s, end = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
            while stack and stack[-1][0] <= s:  # ended before this one starts
                stack.pop()
            if stack and stack[-1][0] >= end:
                selfs[stack[-1][1]] -= ns(e["dur"])
            stack.append((end, i))
        for e, v in zip(evs, selfs):
            if not e["name"].startswith("ProfilerStep#") and e.get("cat", "").lower() in ("operator", "cpu_op"):
                self_by_name[e["name"]] += v
    name, value = self_by_name.most_common(1)[0]
    top = max(d.ops_by_name, key=lambda o: o.host_self_ns)
    assert (top.name, top.host_self_ns) == (name, value)
    # calls of that op: a hand count
    assert top.calls == sum(1 for e in ops if e["name"] == name)


def test_resnet_top_kernel_count(resnet):
    d, events = resnet
    k = [e for e in events if e.get("cat", "").lower() == "kernel"]
    tot = Counter()
    cnt = Counter()
    for e in k:
        tot[e["name"]] += ns(e["dur"])
        cnt[e["name"]] += 1
    name, t = tot.most_common(1)[0]
    top = d.kernels_by_name[0]
    assert (top.name, top.total_ns, top.calls) == (name, t, cnt[name])
    assert sum(x.calls for x in d.kernels_by_name) == len(k)


def test_resnet_reports(resnet):
    d, _ = resnet
    rep = report.op_summary(d)
    assert rep.columns == ["Op Type", "Calls", "Total(ms)", "Avg(ms)", "Min(ms)", "Max(ms)", "GFLOP", "TFLOP/s", "Roof(%)"]
    totals = [r[2] for r in rep.rows]
    assert totals == sorted(totals, reverse=True)
    assert str(report.memory_summary(d)).count("cuda:0") == 1
    assert {h.rule for h in d.rule_hits} >= {"dataloader_share"}  # num_workers=0 sample: DataLoader > 5 %
    json.dumps(to_plain(d))


# ------------------------------------------------------------------ HTA temporal breakdown


def test_hta_temporal_breakdown_df_index_resolver():
    p = fixture_path("hta", "df_index_resolver", "df_index_resolver.json.gz")
    raw, events = load(p)
    d = build_digest(read_kineto(p))
    assert_sums(d)
    assert [(s.number, s.start_ns, s.dur_ns) for s in d.steps] == hand_steps(events)
    windows = [(s.start_ns, s.start_ns + s.dur_ns) for s in d.steps]
    # HTA: U = union of all GPU kernels (kernel, memcpy, memset); compute = union of the
    # COMPUTATION kernels (not nccl / memcpy / memset); idle = span - |U|; non-compute = |U| - compute.
    # Here restricted to the steps (our breakdown covers the steps only).
    gpu = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events if e.get("cat") in GPU_CATS]
    comp = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
            if e.get("cat") == "kernel" and not (e["name"].startswith("nccl") or "ncclKernel" in e["name"])]
    u = length_in(gpu, windows)
    compute = length_in(comp, windows)
    span = sum(b - a for a, b in windows)
    got = {f: sum(getattr(s.breakdown, f) for s in d.steps) for f in BREAKDOWN}
    assert got["compute_ns"] + got["overlapped_ns"] == compute
    busy = got["compute_ns"] + got["overlapped_ns"] + got["communication_ns"] + got["memcpy_ns"] + got["memset_ns"]
    assert busy == u
    assert busy - compute == u - compute  # HTA non-compute
    assert span - busy == span - u  # HTA idle (device) within the steps
    # comm/comp overlap (HTA get_comm_comp_overlap numerator): |compute ∩ comm|
    comm = merge((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
                 if e.get("cat") == "kernel" and (e["name"].startswith("nccl") or "ncclKernel" in e["name"]))
    inter = intersect(merge(comp), comm)
    assert got["overlapped_ns"] == length_in(inter, windows)
    # memory: the peak of Total Allocated on the GPU
    mem = [e for e in raw["traceEvents"] if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == 1]
    peak = max(mem, key=lambda e: e["args"]["Total Allocated"])
    m = {x.device: x for x in d.memory}["cuda:1"]
    assert m.peak_allocated_bytes == peak["args"]["Total Allocated"]
    assert m.allocations == sum(1 for e in mem if e["args"]["Bytes"] > 0)
    assert len(m.curve_ts_ns) <= 2000 and m.peak_allocated_bytes in m.curve_allocated_bytes


# ------------------------------------------------------------------ 8 ranks of DLRM (NCCL)


@pytest.fixture(scope="module")
def dlrm():
    files = sorted(glob.glob(str(fixture_path("param", "dlrm_8ranks") / "*.pt.trace.json.gz")))
    assert len(files) == 8
    return [(build_digest(read_kineto(f)), load(f)[1]) for f in files]


def test_dlrm_comm_calls_equal_across_ranks(dlrm):
    per_rank = []
    for d, events in dlrm:
        calls = {c.kind: c.calls for c in d.communication.collectives}
        host = Counter(e["name"] for e in events if e.get("cat") in ("cpu_op", "user_annotation") and e["name"].startswith("nccl:"))
        assert calls == {"AllToAll": host["nccl:all_to_all"], "AllReduce": host["nccl:all_reduce"]}
        assert sum(calls.values()) == sum(1 for e in events if e.get("cat") == "kernel" and "ncclKernel" in e["name"])
        per_rank.append(calls)
        assert_sums(d)
    assert all(c == per_rank[0] for c in per_rank) and per_rank[0] == {"AllToAll": 5, "AllReduce": 3}


def test_dlrm_cluster_by_hand(dlrm):
    digests = [d for d, _ in dlrm]
    r = analyse_ranks(digests)
    ranks = [d.window.rank for d in digests]
    assert sorted(ranks) == list(range(8))
    # wait / transfer: j-th nccl kernel of each kind, in start order; transfer = min over ranks
    durs = {}
    for d, events in dlrm:
        k = sorted((ns(e["ts"]), ns(e["dur"]), e["name"]) for e in events if e.get("cat") == "kernel" and "ncclKernel" in e["name"])
        durs[d.window.rank] = {"AllReduce": [x[1] for x in k if "AllReduce" in x[2]],
                               "AllToAll": [x[1] for x in k if "SendRecv" in x[2]]}
    for kind in ("AllReduce", "AllToAll"):
        n = len(durs[0][kind])
        transfer = [min(durs[r][kind][j] for r in range(8)) for j in range(n)]
        c = [x for x in r["collectives"] if x["kind"] == kind][0]
        for rk in range(8):
            assert c["per_rank"][str(rk)]["transfer_ns"] == sum(transfer)
            assert c["per_rank"][str(rk)]["wait_ns"] == sum(durs[rk][kind]) - sum(transfer)
    # slow rank: (max - min) / mean of each metric over the ranks (msprof-analyze rule)
    a = {d.window.rank: d.average for d in digests}
    metrics = {"computing": {k: v.compute_ns + v.overlapped_ns for k, v in a.items()},
               "communication": {k: v.communication_ns for k, v in a.items()},
               "free": {k: v.total_ns - v.compute_ns - v.overlapped_ns - v.communication_ns for k, v in a.items()}}
    got = {x["metric"]: x for x in r["slow_ranks"]}
    for m, vals in metrics.items():
        mean = sum(vals.values()) / 8
        ratio = (max(vals.values()) - min(vals.values())) / mean
        assert got[m]["ratio"] == pytest.approx(ratio, rel=1e-12)
        assert got[m]["flagged"] == (ratio > 0.05)
        slow = min(vals, key=vals.get) if m == "communication" else max(vals, key=vals.get)
        assert got[m]["slowest_rank"] == slow


# ------------------------------------------------------------------ Ascend level1 vs step_trace_time.csv


@pytest.mark.parametrize("level", ["level0", "level1", "level2"])
@pytest.mark.parametrize("rank", [0, 1])
def test_ascend_step_trace(level, rank):
    folder = fixture_path("ascend", level, f"rank{rank}_ascend_pt")
    out = folder / "ASCEND_PROFILER_OUTPUT"
    with open(out / "step_trace_time.csv", newline="") as f:
        (row,) = list(csv.DictReader(f))
    us = {k: Decimal(v.strip()) * 1000 for k, v in row.items() if k not in ("Step", "Device_id")}
    d = build_digest(read_ascend(folder))
    assert_sums(d)
    (s,) = d.steps
    assert s.number == int(row["Step"])
    b = s.breakdown
    # Tolerance 1 µs: the csv holds float µs sums written by CANN (e.g. 8873.756000000001) of the
    # same device tasks that kernel_details.csv lists in µs with 3 decimals; the sums differ only
    # by float rounding (~20 ns seen). The step span is not compared: CANN's Stage is the
    # device-side step, ours the ProfilerStep host range extended to its device work, so the
    # csv's Free differs from our rest by exactly (our step time - Stage).
    tol = 1000
    assert abs(b.compute_ns + b.overlapped_ns - us["Computing"]) <= tol
    assert abs(b.overlapped_ns - us["Overlapped"]) <= tol
    assert abs(b.communication_ns - us["Communication(Not Overlapped)"]) <= tol
    assert abs(b.overlapped_ns + b.communication_ns - us["Communication"]) <= tol
    rest = b.total_ns - b.compute_ns - b.overlapped_ns - b.communication_ns
    assert abs(rest - (us["Free"] + (s.dur_ns - us["Stage"]))) <= 2 * tol
    if level != "level1":
        return
    # communication calls = hcom rows of kernel_details.csv
    with open(out / "kernel_details.csv", newline="") as f:
        hcom = [r for r in csv.DictReader(f) if r["Name"].startswith("hcom_")]
    assert sum(c.calls for c in d.communication.collectives) == len(hcom)
    # memory peak: max Total Allocated of the PTA+GE rows of memory_record.csv (MB = MiB);
    # tolerance 1 KiB: the csv rounds bytes / 1024**2 to a float
    with open(out / "memory_record.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["Component"] == "PTA+GE" and r["Total Allocated(MB)"]]
    peak = max(float(r["Total Allocated(MB)"]) for r in rows) * 1024 ** 2
    (m,) = [x for x in d.memory if x.device.lower().startswith("npu")]
    assert abs(m.peak_allocated_bytes - peak) <= 1024
    with open(out / "operator_memory.csv", newline="") as f:
        n_alloc = sum(1 for r in csv.DictReader(f) if float(r["Size(KB)"]) > 0)
    assert m.allocations == n_alloc
    # the CANN modules memory_record.csv does not name (HCCL, RUNTIME ...): each one's peak Total Reserved of
    # npu_module_mem.csv (MB = MiB, rounded to the byte as here)
    with open(out / "npu_module_mem.csv", newline="") as f:
        module_peak = {}
        for r in csv.DictReader(f):
            b = round(float(r["Total Reserved(MB)"]) * 1024 ** 2)
            module_peak[r["Component"]] = max(module_peak.get(r["Component"], -1), b)
    with open(out / "memory_record.csv", newline="") as f:
        recorded = {r["Component"] for r in csv.DictReader(f)}
    only_modules = {c.component: c.peak_reserved_bytes for c in m.components if c.component not in recorded}
    assert only_modules and {k: module_peak[k] for k in only_modules} == only_modules
    assert any(v > 0 for v in only_modules.values())
    # wait / transfer from communication.json (ms floats -> ns: tolerance 10 ns for the rounding
    # of the 4 ops), links = the "<op>-total" cells of communication_matrix.json
    with open(out / "communication.json") as f:
        cj = json.load(f)
    ops = [v for st in cj.values() for part in ("collective", "p2p") for k, v in (st.get(part) or {}).items()
           if k != "Total Op Info"]
    transit = sum(v["Communication Time Info"]["Transit Time(ms)"] for v in ops) * 1e6
    wait = sum(v["Communication Time Info"]["Wait Time(ms)"] for v in ops) * 1e6
    assert abs(d.communication.transfer_ns - transit) <= 10 and abs(d.communication.wait_ns - wait) <= 10
    with open(out / "communication_matrix.json") as f:
        mj = json.load(f)
    cells = [(k, l) for st in mj.values() for part in st.values() for k, links in part.items() if "-total@" in k
             for l in links]
    assert len(d.communication.links) == len(cells)


# ------------------------------------------------------------------ a fresh CPU torch.profiler trace


def test_fresh_cpu_trace(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, schedule

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    path = tmp_path / "cpu.pt.trace.json"
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=3),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(path)), record_shapes=True,
                 profile_memory=True) as prof:
        for _ in range(4):
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            prof.step()
    raw, events = load(path)
    d = build_digest(read_kineto(path))
    assert_sums(d)
    hand = hand_steps(events)
    assert [(s.number, s.start_ns, s.dur_ns) for s in d.steps] == hand and len(hand) == 3
    addmm = sum(1 for e in events if e["name"] == "aten::addmm" and e.get("cat") == "cpu_op")
    assert addmm == 2 * 3  # two Linear layers, three active steps (forward only uses addmm)
    by = {o.name: o for o in d.ops_by_name}
    assert by["aten::addmm"].calls == addmm
    assert by["aten::addmm"].tc_eligible
    shapes = {o.input_shapes for o in d.ops_by_shape if o.name == "aten::addmm"}
    assert len(shapes) == 2  # one per layer
    # CPU-only: no device categories
    for s in d.steps:
        assert s.breakdown.compute_ns == s.breakdown.memcpy_ns == s.breakdown.runtime_ns == 0
    (m,) = [x for x in d.memory if x.device == "CPU"]
    mem = [e for e in raw["traceEvents"] if e.get("name") == "[memory]"]
    assert m.allocations == sum(1 for e in mem if e["args"]["Bytes"] > 0)
    assert m.peak_allocated_bytes == max(e["args"]["Total Allocated"] for e in mem)


def test_fresh_cpu_gloo_trace(tmp_path):
    """CPU-only gloo run (one rank): host collectives are the communication."""
    def collectives(dist, x):
        dist.all_reduce(x)
        dist.broadcast(x, 0)

    path = one_rank_gloo_trace(tmp_path, collectives)
    raw, events = load(path)
    d = build_digest(read_kineto(path))
    assert_sums(d)
    assert [(s.number, s.start_ns, s.dur_ns) for s in d.steps] == hand_steps(events)
    hand = Counter(e["name"] for e in events if e["name"].startswith("gloo:"))
    got = {c.kind: c.calls for c in d.communication.collectives}
    assert got == {"AllReduce": hand["gloo:all_reduce"], "Broadcast": hand["gloo:broadcast"]} == {"AllReduce": 2, "Broadcast": 2}
    # communication time of the steps = union of the backend ranges (gloo:*) inside them: the rows
    # the communication table lists, so the table and the breakdown agree
    comm = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events if e["name"].startswith("gloo:")]
    windows = [(s.start_ns, s.start_ns + s.dur_ns) for s in d.steps]
    assert sum(s.breakdown.communication_ns for s in d.steps) == length_in(comm, windows) > 0
    assert d.communication.total_ns == length_in(comm, windows)
    assert str(report.communication_summary(d)).count("AllReduce") == 1


def _kernel_rows(folder):
    with open(folder / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_ascend_level1_cores_and_cluster():
    """Per-core time = sums of kernel_details.csv Duration(us) per Accelerator Core (µs with 3
    decimals: exact in ns); across the two ranks, wait/transfer as CANN measured them on each rank
    (communication.json: the figures msprof-analyze's cluster analysis uses too)."""
    folders = [fixture_path("ascend", "level1", f"rank{r}_ascend_pt") for r in (0, 1)]
    digests = [build_digest(read_ascend(f)) for f in folders]
    durs, cann = {}, {}
    for f, d in zip(folders, digests):
        rows = _kernel_rows(f)
        per_core = Counter()
        calls = Counter()
        for r in rows:
            per_core[r["Accelerator Core"]] += ns(r["Duration(us)"].strip())
            calls[r["Accelerator Core"]] += 1
        assert {c.core: (c.calls, c.total_ns) for c in d.cores} == {k: (calls[k], per_core[k]) for k in per_core}
        hcom = sorted((Decimal(r["Start Time(us)"].strip()), ns(r["Duration(us)"].strip())) for r in rows
                      if r["Name"].startswith("hcom_"))
        durs[d.window.rank] = [x[1] for x in hcom]
        with open(f / "ASCEND_PROFILER_OUTPUT" / "communication.json") as fh:
            ops = [v["Communication Time Info"] for st in json.load(fh).values() for k, v in st["collective"].items()
                   if k != "Total Op Info"]
        cann[d.window.rank] = (sum(round(o["Transit Time(ms)"] * 1e6) for o in ops),
                               sum(round(o["Wait Time(ms)"] * 1e6) for o in ops))
    r = analyse_ranks(digests)
    assert r["matrix_source"] == "links" and r["matrix"]
    for x in r["ranks"]:
        assert (x["transfer_ns"], x["wait_ns"]) == cann[x["rank"]]
        assert x["p2p_wait_ns"] == 0
    (c,) = r["collectives"]
    assert c["wait_source"] == "communication.json" and c["comm_type"] == "collective"
    assert c["total_ns"] == sum(sum(v) for v in durs.values())


@pytest.mark.parametrize("rank", [0, 1])
def test_ascend_db_step_trace(rank):
    """SQLite export: the same columns from analysis.db StepTraceTime (µs floats, 3 decimals;
    tolerance 1 µs as for the csv)."""
    folder = fixture_path("ascend", "db_level1", f"rank{rank}_ascend_pt")
    con = read_db(folder / 'ASCEND_PROFILER_OUTPUT' / 'analysis.db')
    try:
        (row,) = con.execute("select step, computing, overlapped, communication_not_overlapped from StepTraceTime").fetchall()
    finally:
        con.close()
    d = build_digest(read_ascend(folder))
    assert_sums(d)
    (s,) = d.steps
    b = s.breakdown
    assert s.number == int(row[0])
    assert abs(b.compute_ns + b.overlapped_ns - row[1] * 1000) <= 1000
    assert abs(b.overlapped_ns - row[2] * 1000) <= 1000
    assert abs(b.communication_ns - row[3] * 1000) <= 1000


def test_nccl_collective_sizes_and_groups():
    """NCCL kernels that carry their collective args: bytes = In msg nelems x dtype size (summed by
    hand per collective), group = the process group; bandwidth = bytes / summed kernel time."""
    p = fixture_path("hta", "nccl_parser_config", "nccl_data.json.gz")
    raw, events = load(p)
    size = {"Float": 4, "Half": 2, "BFloat16": 2, "Double": 8, "Long": 8, "Int": 4, "Byte": 1, "Char": 1, "Bool": 1}
    kinds = {"allreduce": "AllReduce", "broadcast": "Broadcast"}
    want = defaultdict(lambda: [0, 0, 0])
    for e in events:
        a = e.get("args", {})
        if e.get("cat") == "kernel" and "Collective name" in a:
            w = want[kinds[a["Collective name"]]]
            w[0] += 1
            w[1] += ns(e["dur"])
            w[2] += a["In msg nelems"] * size[a["dtype"]]
    d = build_digest(read_kineto(p))
    got = {c.kind: [c.calls, c.total_ns, c.bytes] for c in d.communication.collectives}
    # kernel durations are float µs with 3 decimals: our reader's ns equal Decimal * 1000 exactly
    assert got == {k: v for k, v in want.items()}
    for c in d.communication.collectives:
        assert c.group.startswith("0") and c.bandwidth_gbps == pytest.approx(c.bytes / c.total_ns)
    assert_sums(d)
