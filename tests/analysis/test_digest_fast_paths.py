"""The digest's vectorised building blocks against straightforward per-event computations, on real
fixtures and on hand-made edge cases: the nesting of events (common.nest), the grouping helpers
(group_rows, dense_codes, thread_keys, id_mask), the fusion rule's word-by-word scan of operator
sequences (rules/sequence.py, rules/fusion.py) and the memory curve's and events' selections.
Their speed is measured by benchmarks/bench_digest.py."""
from __future__ import annotations

import bisect
import random
import re
import tempfile
from collections import Counter, defaultdict
from functools import lru_cache

import numpy as np
import pytest

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.common import dense_codes, group_rows, id_mask, ids_matching, nest, sum_up_tree, thread_keys
from canning_tb.analysis.context import Context
from canning_tb.analysis.memory import _largest, downsample
from canning_tb.analysis.rules.engine import RuleInput
from canning_tb.analysis.rules.events import top_level_ops
from canning_tb.analysis.rules.fusion import PATTERNS, _matches, _thread_sequences
from canning_tb.analysis.rules.sequence import sequences
from canning_tb.analysis.summary import has_device_work
from canning_tb.ingest.table import NONE, Kind
from canning_tb.store import Store
from canning_tb.store.store import read_window
from conftest import fixture_path
from _synthetic import ev, table

FIXTURES = [("kineto", "resnet50_v100"), ("hta", "trace_diff"), ("hta", "df_index_resolver"), ("ascend", "level1"),
            ("param", "dlrm_8ranks"), ("hta", "amd_trace")]


_CACHES = tempfile.TemporaryDirectory(prefix="fast-paths-")  # removed when the test process ends


@lru_cache(maxsize=None)
def fixture_table(parts: tuple[str, ...]):
    """The first window of a fixture folder, read as a viewer reads it."""
    store = Store(str(fixture_path(*parts)), cache_dir=tempfile.mkdtemp(dir=_CACHES.name))
    run = store.runs()[0]
    worker = store.workers(run)[0]
    return read_window(store.windows(run, worker.name)[0])


def reference_nest(ts, dur, pid, tid) -> tuple[list[int], list[int]]:
    """Per event, one at a time, on each (pid, tid) in (start, longer first, row) order: depth = the
    earlier events still open at its start (end > start); parent = the last earlier event one level
    up, kept only when it contains the event; where one was dropped, depth = the length of the
    chain of kept parents."""
    parent, depth = [NONE] * len(ts), [0] * len(ts)
    threads = defaultdict(list)
    for i in range(len(ts)):
        threads[(pid[i], tid[i])].append(i)
    dropped = False
    for members in threads.values():
        ends: list[int] = []  # ends of the earlier events, sorted
        last_at: dict[int, int] = {}
        for i in sorted(members, key=lambda i: (ts[i], -dur[i], i)):
            level = len(ends) - bisect.bisect_right(ends, ts[i])
            up = last_at.get(level - 1) if level > 0 else None
            if up is not None and ts[up] + dur[up] >= ts[i] + dur[i]:
                parent[i] = up
            dropped |= level > 0 and parent[i] == NONE
            depth[i] = level
            last_at[level] = i
            bisect.insort(ends, ts[i] + dur[i])
    if dropped:
        depth = [_chain(parent, i) for i in range(len(ts))]
    return parent, depth


def _chain(parent: list[int], i: int) -> int:
    count = 0
    while parent[i] != NONE:
        i, count = parent[i], count + 1
    return count


def assert_nest_as_reference(t, rows: np.ndarray) -> None:
    e = t.events
    got = nest(t, rows)
    parent, depth = reference_nest(*(e[c][rows].tolist() for c in ("ts", "dur", "pid", "tid")))
    assert got.parent.tolist() == parent
    assert got.depth.tolist() == depth


def row_sets(t) -> dict[str, np.ndarray]:
    """The row sets the digest nests: host operators + runtime calls, CPU operators, python
    functions before CPU operators (call stacks, module tree), and every event."""
    e = t.events
    host = e["device"] == NONE
    ops = np.flatnonzero((e["kind"] == int(Kind.CPU_OP)) & host)
    py = np.flatnonzero((e["kind"] == int(Kind.PYTHON_FUNCTION)) & host)
    calls = np.isin(e["kind"], [int(Kind.CPU_OP), int(Kind.USER_ANNOTATION), int(Kind.RUNTIME)]) & host
    return {"host": np.flatnonzero(calls), "ops": ops, "python+ops": np.concatenate([py, ops]),
            "all": np.arange(len(t))}


@pytest.mark.parametrize("parts", FIXTURES, ids="/".join)
def test_nest_as_per_event_reference_on_fixtures(parts):
    t = fixture_table(parts)
    for name, rows in row_sets(t).items():
        if len(rows):
            assert_nest_as_reference(t, rows)


def test_nest_edge_cases():
    cpu, rt = Kind.CPU_OP, Kind.RUNTIME
    events = [
        ev("outer", cpu, 100, 100), ev("same", cpu, 100, 100), ev("tie", cpu, 100, 50),  # equal starts
        ev("zero_at_start", cpu, 100, 0), ev("zero_inside", cpu, 120, 0), ev("zero_at_end", cpu, 200, 0),
        ev("overlaps", cpu, 180, 60), ev("inside_overlap", rt, 190, 10),  # overlaps without nesting
        ev("other_thread", cpu, 110, 500, tid=2), ev("in_other", cpu, 150, 10, tid=2),
        ev("other_pid", cpu, 100, 100, pid=9), ev("zero_pair", cpu, 300, 0), ev("zero_pair", cpu, 300, 0),
    ]
    t = table(events)
    for rows in (np.arange(len(t)), np.arange(len(t))[::-1], np.arange(0, len(t), 2)):
        assert_nest_as_reference(t, rows)
    without_zero_length = np.flatnonzero(t.events["dur"] > 0)
    assert_nest_as_reference(t, without_zero_length)
    assert nest(t, without_zero_length).depth.max() == 2


def test_nest_of_threads_far_apart_in_time():
    """Times whose spread times the thread count would overflow an int64 are ranked first."""
    far = 2 ** 62
    events = [ev("a", Kind.CPU_OP, 0, 10), ev("b", Kind.CPU_OP, 2, 3), ev("c", Kind.CPU_OP, far, 10, tid=2),
              ev("d", Kind.CPU_OP, far + 1, 9, tid=2), ev("e", Kind.CPU_OP, far + 5, 1, tid=3),
              ev("long", Kind.CPU_OP, 0, far + 20, tid=2)]
    t = table(events)
    assert_nest_as_reference(t, np.arange(len(t)))
    assert nest(t, np.arange(len(t))).depth.tolist() == [0, 0, 1, 1, 2, 0]  # rows by time: a, long, b, c, d, e


@pytest.mark.parametrize("parts", FIXTURES[:3], ids="/".join)
def test_grouping_as_numpy_unique(parts):
    e = fixture_table(parts).events
    for cols in (["name"], ["name", "shapes"], ["pid", "tid"], ["correlation"], ["kind", "ts"]):
        keys = np.stack([e[c].astype(np.int64) for c in cols], axis=1)
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        got_uniq, got_inverse = group_rows(keys)
        assert np.array_equal(got_uniq, uniq) and np.array_equal(got_inverse, inverse.reshape(-1))
    for c in ("name", "tid", "ts", "external_id"):
        uniq, inverse = np.unique(e[c], return_inverse=True)
        codes, count = dense_codes(e[c])
        assert count == len(uniq) and np.array_equal(codes, inverse.reshape(-1))
    rows = np.flatnonzero(e["device"] == NONE)
    pairs = list(zip(e["pid"][rows].tolist(), e["tid"][rows].tolist()))
    rank = {pair: i for i, pair in enumerate(sorted(set(pairs)))}
    assert thread_keys(fixture_table(parts), rows).tolist() == [rank[p] for p in pairs]


def test_grouping_of_wide_keys():
    """Columns too wide to pack into one int64 go through lexsort, with the same answer."""
    keys = np.array([[2 ** 40, -(2 ** 40)], [5, 7], [2 ** 40, -(2 ** 40)], [-(2 ** 40), 2 ** 40], [5, 7]], np.int64)
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    got_uniq, got_inverse = group_rows(keys)
    assert np.array_equal(got_uniq, uniq) and np.array_equal(got_inverse, inverse.reshape(-1))


def test_id_mask_as_isin():
    col = np.array([-1, 0, 3, 7, 2, -5, 9, 3], np.int32)
    for ids in ([3, 9], [], [0, -1, 42], [7]):
        assert id_mask(col, ids, 8).tolist() == [int(v) in ids and 0 <= v < 8 for v in col]


VOCAB = ["pow", "mean", "add", "rsqrt", "mul", "silu", "neg", "slice", "cat", "matmul", "bmm", "div", "softmax",
         "_softmax", "dropout", "permute", "contiguous", "view", "reshape", "transpose", "masked_fill",
         "evaluate_function: MulBackward0", "mul add", "x\tmul", "", " mul", "silu  mul", "conv2d"]


def char_scan(names: list[str], regex: str) -> list[tuple[int, int]]:
    """(first operator, operator after the last) per match, by scanning the joined text (the
    definition the patterns are written for): the first operator starting at or after the match's
    start, and the first starting at or after its end."""
    text = " ".join(names)
    starts = [sum(len(n) + 1 for n in names[:i]) for i in range(len(names) + 1)]
    spans = []
    for m in re.finditer(r"(?<!\S)" + regex + r"(?!\S)", text):
        lo = next(i for i, at in enumerate(starts) if at >= m.start())
        hi = next(i for i, at in enumerate(starts) if at >= m.end())
        spans.append((lo, hi))
    return spans


@pytest.mark.parametrize("seed", range(6))
def test_word_scan_as_character_scan(seed):
    rng = random.Random(seed)
    plain = [w for w in VOCAB if w and re.fullmatch(r"\S+(?: \S+)*", w)]
    threads = [[rng.choice(plain) for _ in range(400)], [rng.choice(VOCAB) for _ in range(400)],
               ["pow", "mean", "add", "rsqrt", "mul", "mul"] * 20]
    names = sorted(set(VOCAB))
    ids = [np.array([names.index(n) for n in thread], np.int64) for thread in threads]
    regexes = [p[2] for p in PATTERNS] + ["mul add", "mul(?: add)*", "evaluate_function: MulBackward0 mul", "nothere"]
    seqs = sequences(names, ids)
    assert seqs[0].words is not None and seqs[1].words is None  # the second holds names a word scan cannot take
    for seq, thread in zip(seqs, threads):
        for regex in regexes:
            assert [tuple(s) for s in seq.spans(regex).tolist()] == char_scan(thread, regex), regex


def reference_top_level(ctx: Context) -> dict[int, list[int]]:
    """tid -> host positions of the CPU operators whose parent is not a CPU operator, by start."""
    e, host = ctx.ev, ctx.host
    out = defaultdict(list)
    for p in range(len(host.rows)):
        row = host.rows[p]
        up = host.parent[p]
        if e["kind"][row] == int(Kind.CPU_OP) and (up == NONE or e["kind"][host.rows[up]] != int(Kind.CPU_OP)):
            out[int(e["tid"][row])].append(p)
    return {tid: sorted(ps, key=lambda p: (int(e["ts"][host.rows[p]]), p)) for tid, ps in sorted(out.items())}


@pytest.mark.parametrize("parts", FIXTURES, ids="/".join)
def test_fusion_matches_as_character_scan_on_fixtures(parts):
    """The fusion rule's counts on real operator sequences, for patterns made from the fixture's own
    most frequent neighbours (the rule's own patterns never match there)."""
    t = fixture_table(parts)
    ctx = Context(t)
    inp = RuleInput(build_digest(t), ctx)
    expected = reference_top_level(ctx)
    found = top_level_ops(inp)
    assert [ids.tolist() for ids, _, _ in found] == [[int(ctx.ev["name"][ctx.host.rows[p]]) for p in ps]
                                                      for ps in expected.values()]
    short = [(t.strings[int(i)] or "").split("::", 1)[-1] for i in range(len(t.strings))]
    texts = [[short[i] for i in ids.tolist()] for ids, _, _ in found]
    pairs = Counter((a, b) for names in texts for a, b in zip(names, names[1:]))
    threads = _thread_sequences(inp)
    regexes = [f"{a} {b}(?: {b})*" for (a, b), _ in pairs.most_common(6) if re.fullmatch(r"\w+", a + b)][:3]
    assert regexes
    for regex in regexes:
        count, total, first = 0, 0, ""
        for (ids, host_ns, device_ns), names in zip(found, texts):
            times = device_ns if has_device_work(inp.digest) else host_ns
            for lo, hi in char_scan(names, regex):
                count, total = count + 1, total + int(times[lo:hi].sum())
                first = first or t.strings[int(ids[lo])]
        assert count > 0
        assert _matches(inp, threads, regex) == (count, total, first)


def test_memory_downsample_as_per_bucket_loop():
    """The memory curve keeps, per bucket of consecutive points, the first maximum and the first
    minimum, plus the first, the last and the global maximum."""
    rng = np.random.default_rng(3)
    values = rng.integers(0, 50, 5000).astype(np.int64)  # many equal values: the first one counts
    max_points = 102
    buckets = max(1, (max_points - 2) // 2)
    edges = np.linspace(0, len(values), buckets + 1).astype(np.int64)
    expected = {0, len(values) - 1, int(np.argmax(values))}
    for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist()):
        part = values[lo:hi].tolist()
        expected |= {lo + part.index(max(part)), lo + part.index(min(part))}
    assert downsample(values, max_points).tolist() == sorted(expected)
    assert downsample(values[:50], max_points).tolist() == list(range(50))


def test_largest_memory_events_as_full_sort():
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 30, 3000).astype(np.int64)
    when = rng.integers(0, 100, 3000).astype(np.int64)
    for count in (1, 10, 500, 2999):
        assert _largest(sizes, when, count).tolist() == np.lexsort((when, -sizes))[:count].tolist()


def test_ids_matching_sees_strings_added_later():
    t = table([ev("aten::mul", Kind.CPU_OP, 0, 10), ev("aten::add", Kind.CPU_OP, 20, 10)])
    rx = re.compile(r"^aten::(mul|div)$")
    assert ids_matching(t, rx).tolist() == [t.strings.find("aten::mul")]
    t.events["name"][1] = t.strings.id("aten::div")  # a name added later
    assert ids_matching(t, rx).tolist() == [t.strings.find("aten::mul"), t.strings.find("aten::div")]


def test_ids_matching_looks_at_names_only():
    """Strings that are no event's name (call stacks, shapes) are never matched."""
    t = table([ev("aten::mul", Kind.CPU_OP, 0, 10)])
    t.strings.id("model.py(3): forward;aten::mul")
    assert ids_matching(t, re.compile(r"aten::mul")).tolist() == [t.strings.find("aten::mul")]


def test_sum_up_tree_as_walk_to_the_root():
    """Each node's value is added to itself and to every ancestor, column by column."""
    ctx = Context(fixture_table(FIXTURES[0]))
    host = ctx.host
    values = np.stack([ctx.ev["dur"][host.rows], np.arange(len(host.rows)) % 7], axis=1).astype(np.int64)
    expected = np.zeros_like(values)
    for node in range(len(host.rows)):
        at = node
        while at != NONE:
            expected[at] += values[node]
            at = host.parent[at]
    assert np.array_equal(sum_up_tree(values, host), expected)
    assert np.array_equal(sum_up_tree(values[:, 0], host), expected[:, 0])


def _inside_per_range(ev, ranges, candidates) -> list[bool]:
    """Per candidate, one range at a time: same pid and tid, start in [range start, range end)."""
    out = []
    for c in candidates.tolist():
        out.append(any(ev["pid"][r] == ev["pid"][c] and ev["tid"][r] == ev["tid"][c]
                       and ev["ts"][r] <= ev["ts"][c] < ev["ts"][r] + ev["dur"][r] for r in ranges.tolist()))
    return out


@pytest.mark.parametrize("parts", FIXTURES[:3], ids="/".join)
@pytest.mark.parametrize("seed", [0, 1])
def test_starts_inside_ranges_as_one_range_at_a_time(parts, seed):
    """fusion._inside (the optimizer rule's "host ops inside its ranges") on a fixture's real events: random
    ranges of every length (nested, overlapping, touching, empty) against all host rows."""
    from canning_tb.analysis.rules.fusion import _inside
    t = fixture_table(parts)
    ctx = Context(t)
    inp = RuleInput(build_digest(t), ctx)
    rng = np.random.default_rng(seed)
    ranges = np.unique(rng.choice(len(t), size=min(40, len(t)), replace=False))
    ranges = np.concatenate([ranges, ranges[:3]])  # the same range twice
    candidates = ctx.host.rows[:3000]
    assert _inside(inp, ranges, candidates).tolist() == _inside_per_range(ctx.ev, ranges, candidates)


def test_starts_inside_ranges_at_their_edges():
    from canning_tb.analysis.rules.fusion import _union
    lo, hi = np.array([10, 0, 20, 5, 20, 40]), np.array([20, 10, 20, 8, 30, 41])
    starts, ends = _union(lo, hi)
    # by hand: [0,10) and [10,20) touch: kept apart; [5,8) inside [0,10); the empty [20,20) apart before [20,30)
    assert (starts.tolist(), ends.tolist()) == ([0, 10, 20, 20, 40], [10, 20, 20, 30, 41])
    at = np.searchsorted(starts, [0, 9, 10, 19, 20, 29, 30, 39, 40, 41], side="right") - 1
    inside = (at >= 0) & (np.array([0, 9, 10, 19, 20, 29, 30, 39, 40, 41]) < ends[np.maximum(at, 0)])
    assert inside.tolist() == [True, True, True, True, True, True, False, False, True, False]


def test_counter_rows_selected_as_the_dicts_say():
    """side_tables.where_equal on a real level2 rank's counters, held as Columns, against the same rows
    read as dicts one at a time; and on a list of dicts."""
    from canning_tb.ingest.side_tables import Columns, where_equal
    t = fixture_table(("ascend", "level2"))
    counters = t.side["npu_counters"]
    assert isinstance(counters, Columns)
    for equal in ({"group": "HBM", "unit": "bytes/s", "device": "npu:0"}, {"group": "AI Core Freq"},
                  {"group": "no such group"}):
        rows = [r for r in counters if all(r[k] == v for k, v in equal.items())]
        got = where_equal(counters, ("ts_ns", "value", "counter"), **equal)
        assert got["ts_ns"].tolist() == [r["ts_ns"] for r in rows]
        assert got["value"].tolist() == [r["value"] for r in rows]
        ids = got["counter"].tolist()
        assert [counters.strings["counter"][i] for i in ids] == [r["counter"] for r in rows]
        listed = where_equal(list(counters), ("ts_ns", "value"), **equal)
        assert listed == {"ts_ns": [r["ts_ns"] for r in rows], "value": [r["value"] for r in rows]}
    assert len(where_equal(counters, ("ts_ns",), group="HBM")["ts_ns"]) > 0
