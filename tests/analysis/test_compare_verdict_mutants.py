"""analysis/compare/verdict.py under mutation (issue 46): the verdict's words, its line, the memory peak it
names, the throughput, the contributors and the categories, on digests built here. Every expected value is
worked out by hand in a comment or docstring."""
from types import SimpleNamespace

import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.compare.verdict import PER_CATEGORY, category_of_operator, change_text, compare, step_text

MS = 1_000_000


def window(steps_ms, ops=(), breakdown=None, memory=(), batch=None, stacks=()):
    """Steps of `steps_ms` (ms) and their mean as the average; `breakdown`: category -> ms per step on the
    average; ops (name, calls, host self ns, device total ns) in ops_by_name and ops_by_shape (no shapes);
    memory (device, peak bytes); stacks (name, stack, calls, host self ns) in ops_by_stack."""
    d = pb.Digest()
    for i, ms in enumerate(steps_ms):
        d.steps.add(number=i + 1, start_ns=i * 100 * MS, dur_ns=int(ms * MS))
    if steps_ms:
        d.average.total_ns = int(sum(steps_ms) / len(steps_ms) * MS)
    for category, ms in (breakdown or {}).items():
        setattr(d.average, f"{category}_ns", int(ms * MS))
    for name, calls, host_self, device in ops:
        for table in (d.ops_by_name, d.ops_by_shape):
            table.add(name=name, calls=calls, host_self_ns=host_self, host_total_ns=host_self,
                      device_self_ns=device, device_total_ns=device)
    for name, stack, calls, host_self in stacks:
        d.ops_by_stack.add(name=name, call_stack=stack, has_call_stack=bool(stack), calls=calls,
                           host_self_ns=host_self, host_total_ns=host_self)
    for device, peak in memory:
        d.memory.add(device=device, peak_allocated_bytes=peak)
    if batch is not None:
        d.window.environment["batch_size"] = batch
    return d


def test_change_words_at_their_edges():
    """1 % is no longer "about the same" (0.99 % is); a ratio of exactly 1.5 is a ratio, 1.49 a percentage;
    a target of 0 is 100 % lower (no ratio: 100 / 0); a negative target or base, no base: n/a."""
    assert change_text(100, 101, "f", "s") == "1 % s"          # +1 %: ratio 1.01 under 1.5
    assert change_text(100, 99.01, "f", "s") == "about the same"  # -0.99 %
    assert change_text(100, 99, "f", "s") == "1 % f"
    assert change_text(100, 150, "f", "s") == "1.5x s"         # 150 / 100
    assert change_text(150, 100, "f", "s") == "1.5x f"         # 150 / 100 the other way
    assert change_text(100, 149, "f", "s") == "49 % s"         # ratio 1.49
    assert change_text(100, 0, "f", "s") == "100 % f"          # -100 %, no ratio
    assert change_text(10, 3, "f", "s") == "3.3x f"            # 10 / 3 = 3.33
    assert change_text(100, 87.4, "f", "s") == "13 % f"        # -12.6 % rounds to 13
    for base, target in ((100, -1), (-5, 10), (0, 0), (100, None), (None, None)):
        assert change_text(base, target, "f", "s") == "n/a"


def test_step_words_at_their_edges():
    """+1 %: "1 % longer", speed 101 / 100 = 1.01; a ratio of 10 is written whole, 9.09 (100 / 11) with two
    decimals; 99.5 % and 99.6 % with one decimal (a whole 100 would say the step vanished), 100 % and more
    whole; a target of 0 is n/a (no speed ratio)."""
    assert step_text(100, 101) == "step 1 % longer (1.01x slower)"
    assert step_text(100, 99.01) == "step about the same"
    assert step_text(100, 10) == "step 90 % shorter (10x faster)"
    assert step_text(100, 11) == "step 89 % shorter (9.09x faster)"
    assert step_text(100, 0.5) == "step 99.5 % shorter (200x faster)"
    assert step_text(1000, 4) == "step 99.6 % shorter (250x faster)"
    assert step_text(100, 200) == "step 100 % longer (2.00x slower)"
    assert step_text(100, 300) == "step 200 % longer (3.00x slower)"
    assert step_text(100, 0) == step_text(-1, 5) == step_text(5, None) == "n/a"
    assert step_text(1, 2) == "step 100 % longer (2.00x slower)"  # a base of 1 ns is a step time


def test_the_verdict_line_says_every_part():
    """Five steps of 10 ms against five of 5 ms, no spread: the interval is the difference itself, -5 ms
    (-50 % of 10 ms), significant; memory 400 -> 100 bytes (4.0x lower); communication not hidden 2 -> 0.5 ms
    (4.0x less), 20 % -> 10 % of the step (2.0x less); batch 32: 32 / 0.010 s = 3200 -> 6400 samples/s.
    Swapped, every word turns: +5 ms is +100 % of 5 ms, "higher", "more", throughput "2.0x lower"."""
    base = window([10] * 5, breakdown={"communication": 2}, memory=[("cuda:0", 400)], batch="32")
    target = window([5] * 5, breakdown={"communication": 0.5}, memory=[("cuda:0", 100)], batch="32")
    v = compare(base, target).as_dict()["verdict"]
    assert v["text"] == ("step 50 % shorter (2.00x faster), significant (95 % interval -5.000 .. -5.000 ms per step "
                         "(-50.0 % .. -50.0 %)); memory peak 4.0x lower; communication not hidden 2.000 -> 0.500 ms "
                         "per step (4.0x less); throughput 2.0x higher")
    assert v["significance"] == "significant" and v["memory_device"] == "cuda:0"
    assert v["step_time"] == {"base": 10 * MS, "target": 5 * MS, "delta": -5 * MS, "delta_pct": -50.0,
                              "text": "step 50 % shorter (2.00x faster)"}
    assert v["memory_peak"] == {"base": 400.0, "target": 100.0, "delta": -300.0, "delta_pct": -75.0,
                                "text": "4.0x lower"}
    assert v["comm_not_hidden"] == {"base": 2 * MS, "target": 0.5 * MS, "delta": -1.5 * MS, "delta_pct": -75.0,
                                    "text": "4.0x less"}
    share = v["comm_not_hidden_share"]
    assert (share["base"], share["target"], share["text"]) == (pytest.approx(0.2), pytest.approx(0.1), "2.0x less")
    assert v["throughput"]["base"] == pytest.approx(3200) and v["throughput"]["target"] == pytest.approx(6400)
    assert v["throughput"]["delta"] == pytest.approx(3200) and v["throughput"]["delta_pct"] == pytest.approx(100)
    v = compare(target, base).as_dict()["verdict"]
    assert v["text"] == ("step 100 % longer (2.00x slower), significant (95 % interval +5.000 .. +5.000 ms per step "
                         "(+100.0 % .. +100.0 %)); memory peak 4.0x higher; communication not hidden 0.500 -> 2.000 ms "
                         "per step (4.0x more); throughput 2.0x lower")
    assert v["comm_not_hidden_share"]["text"] == "2.0x more"


def test_unknown_parts_of_the_verdict():
    """A baseline without steps: step time n/a (its 0 ns is unknown), cannot judge (0 and 5 steps, both
    counts said); no memory on either side: no memory part; communication 0 -> 3 ms: said without a word
    (a change from 0 has none), its delta known (+3 ms) but no percentage of 0."""
    base = window([], breakdown={"communication": 0})
    target = window([10] * 5)
    target.average.communication_ns = 3_000_501  # 3.000501 ms: "3.001" (ns read as ms by 1e6 exactly)
    v = compare(base, target).as_dict()["verdict"]
    assert v["text"] == "step time n/a; communication not hidden 0.000 -> 3.001 ms per step"
    assert v["significance"] == "cannot judge" and v["step_interval"] is None
    assert v["noise_text"] == ("cannot judge the noise: the baseline has 0 steps, the target 5; 5 steps per side "
                               "are needed (profile more active steps or windows)")
    assert v["step_time"]["base"] is None and v["step_time"]["delta"] is None and v["step_time"]["delta_pct"] is None
    assert v["comm_not_hidden"]["delta"] == 3_000_501 and v["comm_not_hidden"]["delta_pct"] is None
    # swapped: the step n/a on the target side (no steps), communication 3.001 -> 0 ms is 100 % less (no ratio)
    v = compare(target, base).as_dict()["verdict"]
    assert v["text"] == "step time n/a; communication not hidden 3.001 -> 0.000 ms per step (100 % less)"
    assert v["memory_peak"]["base"] is None and v["memory_device"] == ""
    # no communication on either side: no communication part; a target with 5 steps, the baseline 4
    v = compare(window([10] * 4), window([10] * 5)).as_dict()["verdict"]
    assert "communication" not in v["text"] and "the baseline has 4 steps, the target 5;" in v["noise_text"]


@pytest.mark.parametrize("target_extra_ns,word", [(0, "not significant"), (1, "significant"), (-1, "significant")])
def test_significance_at_zero(target_extra_ns, word):
    """No spread: the interval is the difference of the means alone. 0 ns: [0, 0] holds 0, not significant;
    +1 ns: [1, 1] lies above 0; -1 ns: [-1, -1] below."""
    base = pb.Digest()
    target = pb.Digest()
    for i in range(5):
        base.steps.add(number=i + 1, dur_ns=10 * MS)
        target.steps.add(number=i + 1, dur_ns=10 * MS + target_extra_ns)
    base.average.total_ns, target.average.total_ns = 10 * MS, 10 * MS + target_extra_ns
    v = compare(base, target).as_dict()["verdict"]
    assert v["significance"] == word
    assert v["step_interval"]["low_ns"] == v["step_interval"]["high_ns"] == target_extra_ns
    assert v["noise_text"].startswith(f"{word} (95 % interval ")


def peak(*sides):
    v = compare(*sides).as_dict()["verdict"]
    return v["memory_device"], v["memory_peak"]["base"], v["memory_peak"]["target"]


def test_the_memory_peak_is_the_highest_accelerator_s_else_the_cpu_s():
    """Accelerators first: cuda:0 400 and cuda:1 700 over a CPU of 900 -> 700 (cuda:1), on either window of a
    side; "cpu" in lower case is the CPU too; an accelerator at 0 bytes is none (the CPU's 50 then), one at
    1 byte is one; only CPU rows: the CPU's peak; no positive peak at all: unknown."""
    accelerators = window([10], memory=[("cuda:0", 400), ("CPU", 900)])
    second = window([10], memory=[("cuda:1", 700), ("cpu", 950)])
    assert peak([accelerators, second], window([10], memory=[("npu:0", 1), ("CPU", 50)])) == \
        ("npu:0", 700.0, 1.0)
    assert peak(window([10], memory=[("cuda:0", 0), ("CPU", 50)]),
                window([10], memory=[("cpu", 60)])) == ("cpu", 50.0, 60.0)
    assert peak(window([10], memory=[("CPU", 1)]), window([10], memory=[("CPU", 0), ("cuda:0", 0)])) == \
        ("CPU", 1.0, None)
    # the target without memory: the baseline's device is named
    assert peak(window([10], memory=[("npu:3", 5)]), window([10])) == ("npu:3", 5.0, None)


def test_throughput_needs_a_batch_size_and_a_step_time():
    """A batch of 0 or no steps (step time 0): unknown, never a division by 0; a batch of 8 over a 4 ms step
    is 8 / 0.004 = 2000 samples/s (a second read as 1e9 + 1 ns would give 2000.0000005)."""
    t = compare(window([], batch="8"), window([4, 4], batch="8")).as_dict()["verdict"]["throughput"]
    assert t["base"] is None and t["target"] == pytest.approx(2000)
    assert t["target"] == pytest.approx(2000, rel=1e-12)  # ns to s by 1e9 exactly
    t = compare(window([4], batch="0"), window([4], batch="0")).as_dict()["verdict"]["throughput"]
    assert t["base"] is None and t["target"] is None
    # a step of 1 ns is a step time: 3 samples / 1e-9 s
    one = window([], batch="3")
    one.steps.add(number=1, dur_ns=1)
    one.average.total_ns = 1
    assert compare(one, one).as_dict()["verdict"]["throughput"]["base"] == pytest.approx(3e9)


def row(key, base_device=0.0, target_device=0.0):
    return SimpleNamespace(key=key, base_device_total_ns=base_device, target_device_total_ns=target_device)


def test_category_of_an_operator():
    """The dataloader's, the collectives', device work (1 ns on either side is some), the host's."""
    assert category_of_operator(row("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")) == "dataloader"
    assert category_of_operator(row("nccl:all_reduce", 5, 5)) == "communication"
    assert category_of_operator(row("aten::mm", 1, 0)) == "compute"
    assert category_of_operator(row("aten::mm", 0, 1)) == "compute"
    assert category_of_operator(row("aten::mm")) == "host"


def test_contributors_the_largest_first_with_the_dataloader_s_category():
    """Host self ms per step: a 1 -> 6 (+5), b 9 -> 2 (-7), c 1 -> 2 (+1), d 3 -> 3 (0: not a contributor);
    the dataloader category 1 -> 4 ms (+3) with no dataloader operator. top 2: b, a (explained -2); top 3: b,
    a, the dataloader (+1). The step 20 -> 23 ms: unexplained 3 - (-2) = 5, and 3 - 1 = 2."""
    def ops(a, b, c):
        return [("a", 1, a * MS, 0), ("b", 1, b * MS, 0), ("c", 1, c * MS, 0), ("d", 1, 3 * MS, 0)]
    base = window([20], ops(1, 9, 1), breakdown={"dataloader": 1, "host": 19})
    target = window([23], ops(6, 2, 2), breakdown={"dataloader": 4, "host": 19})
    two = compare(base, target, top=2).as_dict()["contributors"]
    assert [(o["name"], o["kind"], o["delta_ns"], o["status"]) for o in two["operators"]] == \
        [("b", "operator", -7 * MS, "changed"), ("a", "operator", 5 * MS, "changed")]
    assert (two["step_delta_ns"], two["explained_ns"], two["unexplained_ns"]) == (3 * MS, -2 * MS, 5 * MS)
    three = compare(base, target, top=3).as_dict()["contributors"]
    assert [(o["name"], o["kind"], o["status"]) for o in three["operators"]][2] == ("dataloader", "category", "changed")
    assert (three["explained_ns"], three["unexplained_ns"]) == (1 * MS, 2 * MS)
    # a dataloader operator in the trace: the category is not added beside it (it would count twice)
    loader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    base.ops_by_name.add(name=loader, calls=1, host_self_ns=1 * MS)
    target.ops_by_name.add(name=loader, calls=1, host_self_ns=4 * MS)
    names = [o["name"] for o in compare(base, target, top=10).as_dict()["contributors"]["operators"]]
    assert "dataloader" not in names and loader in names


def test_contributors_of_one_ns_and_ten_by_default():
    """Twelve operators of +1..+12 ns and one of 0: ten by default (+12..+3), the 0 never; with top 20 every
    changed one, +1 ns the last, in the host category's five too (kind "operator", status "changed") when the
    category lists them: host +78 ns (1 + ... + 12), its five +12..+8, rest 78 - 50 = 28."""
    ops = [(f"op{k:02d}", 1, 100, 0) for k in range(13)]
    base = window([1], ops, breakdown={"host": 0.001})
    target = window([1], [(n, c, 100 + int(n[2:]), d) for n, c, _, d in ops])
    target.average.host_ns = 1000 + 78
    c = compare(base, target).as_dict()["contributors"]
    assert [o["name"] for o in c["operators"]] == [f"op{k:02d}" for k in range(12, 2, -1)]
    every = compare(base, target, top=20).as_dict()["contributors"]["operators"]
    assert [o["delta_ns"] for o in every] == list(range(12, 0, -1))
    (host,) = c["by_category"]
    assert (host["delta_ns"], host["rest_ns"]) == (78, 28)
    assert [(o["name"], o["kind"], o["status"]) for o in host["operators"]] == \
        [(f"op{k:02d}", "operator", "changed") for k in range(12, 7, -1)]
    ones = [window([1], [("a", 1, 5, 0), ("b", 1, 7, 0)]), window([1], [("a", 1, 6, 0), ("b", 1, 7, 0)])]
    (host,) = compare(*ones).as_dict()["contributors"]["by_category"]
    assert [(o["name"], o["delta_ns"]) for o in host["operators"]] == [("a", 1)]


def test_by_category_keeps_five_operators_each_and_the_rest():
    """Six host operators each +1..+6 ms per step (largest first), the host category +30 ms: five shown
    (+6..+2 = 20 ms), rest 30 - 20 = 10. The compute category -4 ms with no operator: listed, rest -4.
    Idle 0 with no operator: not listed. Sorted by |delta|: host 30, compute 4."""
    names = "abcdef"
    base = window([50], [(n, 1, 1 * MS, 0) for n in names], breakdown={"host": 20, "compute": 30})
    target = window([76], [(n, 1, (2 + i) * MS, 0) for i, n in enumerate(names)], breakdown={"host": 50, "compute": 26})
    cats = compare(base, target).as_dict()["contributors"]["by_category"]
    assert [(c["category"], c["delta_ns"], c["rest_ns"]) for c in cats] == [("host", 30 * MS, 10 * MS),
                                                                             ("compute", -4 * MS, -4 * MS)]
    assert PER_CATEGORY == 5
    assert [o["name"] for o in cats[0]["operators"]] == ["f", "e", "d", "c", "b"]
    assert [o["delta_ns"] for o in cats[0]["operators"]] == [6 * MS, 5 * MS, 4 * MS, 3 * MS, 2 * MS]
    # a category whose delta is 0 but with an operator that changed in it: listed, its rest the negative
    base = window([10], [("x", 1, 1 * MS, 0)], breakdown={"host": 10})
    target = window([10], [("x", 1, 3 * MS, 0)], breakdown={"host": 10})
    (host,) = compare(base, target).as_dict()["contributors"]["by_category"]
    assert (host["category"], host["delta_ns"], host["rest_ns"]) == ("host", 0, -2 * MS)


def test_compare_fills_every_part():
    """The sides' sizes (2 windows of 1 and 2 steps: 3 steps; averages 9 and 13.5 ms weighted 1:2, (9 + 27) / 3
    = 12 ms), the breakdown per category (compute (9 + 2 x 12) / 3 = 11 ms), the operators by the asked mode
    (by stack: one row per stack), and a device metric (the target's operator ran device work)."""
    base = [window([9], breakdown={"compute": 9}, batch="4"), window([12, 15], breakdown={"compute": 12}, batch="4")]
    target = window([6], [("aten::mm", 1, 0, 2 * MS)], breakdown={"compute": 6}, batch="4",
                    stacks=[("aten::mm", "m.py(1): f", 1, MS), ("aten::mm", "m.py(2): g", 1, MS)])
    c = compare(base, target, mode="stack").as_dict()
    assert c["base"] == {"windows": 2, "steps": 3, "step_ns": 12 * MS, "batch_size": 4.0}
    assert c["target"] == {"windows": 1, "steps": 1, "step_ns": 6 * MS, "batch_size": 4.0}
    assert (c["metric"], c["mode"]) == ("device", "stack")
    compute = next(b for b in c["breakdown"] if b["category"] == "compute")
    assert compute == {"category": "compute", "base_ns": 11 * MS, "target_ns": 6 * MS, "delta_ns": -5 * MS}
    assert sorted(r["call_stack"] for r in c["operators"]) == ["m.py: f", "m.py: g"]
    assert c["gate"] is None and [r["key"] for r in c["kernels"]] == []
    shaped = compare(base, target, mode="shape").as_dict()["operators"]
    assert [(r["key"], r["call_stack"]) for r in shaped] == [("aten::mm", "")]


def test_the_attribution_reads_operators_by_shape():
    """The same operator at two shapes: by name one matched row (3 -> 3 ms: no code item); by shape [1] is removed
    (-3 ms) and [2] added (+3 ms): two code items, each with its shapes."""
    base, target = window([10] * 5), window([10] * 5)
    base.ops_by_name.add(name="mm", calls=1, host_self_ns=3 * MS)
    target.ops_by_name.add(name="mm", calls=1, host_self_ns=3 * MS)
    base.ops_by_shape.add(name="mm", input_shapes="[1]", calls=1, host_self_ns=3 * MS)
    target.ops_by_shape.add(name="mm", input_shapes="[2]", calls=1, host_self_ns=3 * MS)
    items = compare(base, target).as_dict()["attribution"]["code_items"]
    assert sorted((i["input_shapes"], i["why"]) for i in items) == [("[1]", "removed"), ("[2]", "added")]
