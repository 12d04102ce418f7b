"""An independent reading of a Kineto trace for the number tests: json + plain loops, no canning_tb.

It reproduces the stated definitions (analysis/ops.py, kernels.py, context.py docstrings) by a
different route: a per-thread stack walk for the nesting, a dict join on `correlation` from each
device event to its runtime launch, and the launch's innermost enclosing operator/annotation.
Times are µs in the file; they become int ns through Decimal, exactly.
"""
import gzip
import json
import re
from collections import defaultdict
from decimal import Decimal

HOST_OPS = {"cpu_op", "operator", "user_annotation"}
RUNTIME = {"cuda_runtime", "runtime", "cuda_driver"}
DEVICE = {"kernel", "gpu_memcpy", "memcpy", "gpu_memset", "memset"}
KERNELS = {"kernel"}  # memcpy / memset are device events but not kernels
STEP = re.compile(r"^ProfilerStep#(\d+)$")


def ns(v) -> int:
    return int((Decimal(v) * 1000).to_integral_value())


def load_events(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f, parse_float=Decimal)
    return doc, doc["traceEvents"]


class Ev:
    """One duration event, times in ns."""

    __slots__ = ("name", "cat", "thread", "start", "end", "corr", "ext", "parent", "index", "args")

    def __init__(self, raw, index):
        self.name, self.cat = raw["name"], raw.get("cat", "").lower()
        self.thread = (str(raw["pid"]), str(raw["tid"]))
        self.start = ns(raw["ts"])
        self.end = self.start + max(ns(raw["dur"]), 0)
        args = raw.get("args") or {}
        self.args = args
        self.corr = args.get("correlation")
        self.ext = args.get("External id", args.get("external id"))
        self.parent = None
        self.index = index

    @property
    def dur(self):
        return self.end - self.start


def nest_by_stack(events):
    """Sets .parent of each event to its innermost enclosing event on the same thread (a stack walk:
    an event that started earlier is popped once it has ended by the newcomer's start)."""
    by_thread = defaultdict(list)
    for e in events:
        by_thread[e.thread].append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.start, -e.dur, e.index))
        stack = []
        for e in evs:
            while stack and stack[-1].end <= e.start:
                stack.pop()
            e.parent = stack[-1] if stack and stack[-1].end >= e.end else None
            stack.append(e)


def _covered(events) -> int:
    """Length of the union of the events' [start, end) (a sweep by start)."""
    covered, reach = 0, None
    for d in sorted(events, key=lambda d: d.start):
        lo = d.start if reach is None else max(d.start, reach)
        covered += max(0, d.end - lo)
        reach = d.end if reach is None else max(reach, d.end)
    return covered


OPS = {"cpu_op", "operator"}


def fold_targets(events) -> dict:
    """{event: the event it counts in}: an operator that is the only child of an operator of the same
    name (a redispatch) counts in that parent, up to the outermost, as torch's key_averages() folds
    them; every other event counts in itself. Needs .parent (nest_by_stack)."""
    children = defaultdict(int)
    for e in events:
        if e.parent is not None:
            children[e.parent] += 1

    def folded(e):
        p = e.parent
        return p is not None and e.cat in OPS and p.cat in OPS and p.name == e.name and children[p] == 1

    target = {}
    for e in events:
        cur = e
        while folded(cur):
            cur = cur.parent
        target[e] = cur
    return target


class Trace:
    """Host ops, launches and device events of one trace, joined by hand."""

    def __init__(self, path):
        self.doc, raw = load_events(path)
        xs = [Ev(r, i) for i, r in enumerate(raw) if r.get("ph") == "X" and "dur" in r and "name" in r]
        self.host = [e for e in xs if e.cat in HOST_OPS | RUNTIME]
        self.ops = [e for e in xs if e.cat in HOST_OPS]
        self.runtime = [e for e in xs if e.cat in RUNTIME]
        self.device = [e for e in xs if e.cat in DEVICE]
        nest_by_stack(self.host)
        self.target = fold_targets(self.host)
        launch = {e.corr: e for e in self.runtime if e.corr is not None}
        self.owner = {}  # device event -> launching op/annotation (innermost enclosing its launch)
        for d in self.device:
            rt = launch.get(d.corr)
            if rt is None or rt.parent is None or rt.parent.cat in RUNTIME:
                continue
            self.owner[d] = self.target[rt.parent]
        self.dev_under = defaultdict(set)  # op -> the device events launched by it or its descendants
        for d, op in self.owner.items():
            cur = op
            while cur is not None:
                self.dev_under[cur].add(d)
                cur = cur.parent

    def op_self(self) -> dict:
        """{name: (calls, host self ns)} of the CPU operators: duration minus the direct children's
        (annotations and runtime calls among them), folded calls added to the call they fold into."""
        own = {e: e.dur for e in self.host}
        for e in self.host:
            if e.parent is not None:
                own[e.parent] -= e.dur
        out = defaultdict(lambda: [0, 0])
        for e in self.host:
            top = self.target[e]
            if top.cat in OPS and not STEP.match(top.name):
                out[top.name][1] += own[e]
                out[top.name][0] += top is e
        return {name: tuple(v) for name, v in out.items()}

    def steps(self):
        return sorted((e for e in self.ops if STEP.match(e.name)), key=lambda e: e.start)

    def op_rows(self):
        """{name: {calls, host_total, device_self, device_total, kernels: {kernel: [calls, total]}}}
        over the CPU operators (not annotations), ProfilerStep#N excluded. device_self / device_total:
        the length of the union of the intervals of the device events launched by a call of the name
        / by a call or anything under it (each event once, overlaps once)."""
        rows, under, own = {}, defaultdict(set), defaultdict(set)
        for op in self.ops:
            if op.cat == "user_annotation" or STEP.match(op.name) or self.target[op] is not op:
                continue
            r = rows.setdefault(op.name, {"calls": 0, "host_total": 0, "device_self": 0, "device_total": 0,
                                          "kernels": defaultdict(lambda: [0, 0])})
            r["calls"] += 1
            r["host_total"] += op.dur
            under[op.name] |= self.dev_under[op]
        for d, op in self.owner.items():
            if op.name in rows and op.cat != "user_annotation":
                own[op.name].add(d)
        for name in rows:
            rows[name]["device_self"] = _covered(own[name])
            rows[name]["device_total"] = _covered(under[name])
        for d, op in self.owner.items():
            if op.name in rows and op.cat != "user_annotation":
                k = rows[op.name]["kernels"][d.name]
                k[0] += 1
                k[1] += d.dur
        return rows

    def kernel_rows(self, by_op=False):
        """{name or (name, launching op name): [calls, total, min, max]} of the kernels."""
        out = {}
        for d in self.device:
            if d.cat not in KERNELS:
                continue
            key = (d.name, self.owner[d].name if d in self.owner else "") if by_op else d.name
            r = out.setdefault(key, [0, 0, None, None])
            r[0] += 1
            r[1] += d.dur
            r[2] = d.dur if r[2] is None else min(r[2], d.dur)
            r[3] = d.dur if r[3] is None else max(r[3], d.dur)
        return out


def step_spans(tr: Trace):
    """[(number, start, end)] by the stated rule (analysis/steps.py): ProfilerStep#N on the thread
    holding most of them; the end is the later of the host end and the end of the device events
    whose launch (runtime start, or their own start without one) falls in the host range; each
    end capped at the next step's start."""
    steps = tr.steps()
    per_thread = defaultdict(int)
    for s in steps:
        per_thread[s.thread] += 1
    main = max(per_thread, key=per_thread.get)
    steps = [s for s in steps if s.thread == main]
    launch = {e.corr: e.start for e in tr.runtime if e.corr is not None}
    ends = [s.end for s in steps]
    for d in tr.device:
        t = launch.get(d.corr, d.start)
        for i, s in enumerate(steps):
            if s.start <= t < s.end:
                ends[i] = max(ends[i], d.end)
    out = []
    for i, s in enumerate(steps):
        end = min(ends[i], steps[i + 1].start) if i + 1 < len(steps) else ends[i]
        out.append((int(STEP.match(s.name).group(1)), s.start, max(end, s.start)))
    return out


def comm_kernel_count(tr: Trace) -> int:
    """NCCL kernels (the GPU collective calls)."""
    return sum(1 for d in tr.device if d.cat == "kernel" and "nccl" in d.name.lower())
