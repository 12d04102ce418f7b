"""analysis/compare/ops.py and tree.py under mutation (issue 46): operator and kernel rows per step with every time
field, status and percentage edges, the modes, and the diffed call-stack tree with its depth and size bounds, on
digests built here. Every expected value is worked out by hand in a comment or docstring."""
from types import SimpleNamespace

import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.compare import tree
from canning_tb.analysis.compare.ops import kernel_rows, metric_of, op_time, operator_rows, percent_change, status_of
from canning_tb.analysis.compare.side import side_of
from canning_tb.analysis.compare.tree import operator_tree
from canning_tb.analysis.names import name_map


def digest(steps=1, ops=(), kernels=(), stacks=()):
    """`steps` steps of 1 ms; ops (table, name, calls, host self, device self, device total, host total, shapes,
    stack); kernels (name, calls, total); stacks (name, stack, calls, host self, device self, device total)."""
    d = pb.Digest()
    for i in range(steps):
        d.steps.add(number=i + 1, dur_ns=1_000_000)
    for table, name, calls, hs, ds, dt, ht, shapes, stack in ops:
        getattr(d, table).add(name=name, calls=calls, host_self_ns=hs, device_self_ns=ds, device_total_ns=dt,
                              host_total_ns=ht, input_shapes=shapes, call_stack=stack)
    for name, calls, total in kernels:
        d.kernels_by_name.add(name=name, calls=calls, total_ns=total)
    for name, stack, calls, hs, ds, dt in stacks:
        d.ops_by_stack.add(name=name, call_stack=stack, has_call_stack=bool(stack), calls=calls, host_self_ns=hs,
                           device_self_ns=ds, device_total_ns=dt)
    return d


def rows(base, target, mode="name"):
    return {r.key: r for r in operator_rows(side_of(base), side_of(target), name_map(), mode)}


def test_metric_status_and_time_rules():
    """"device" when either side ran device work; status by calls (0 -> 0 calls is neither added nor removed)
    and by the time's delta (1 ns is a change); an operator's time is device self time when its device total is
    above 0 on either side (1 ns is some), else host self time."""
    host, device = SimpleNamespace(has_device=False), SimpleNamespace(has_device=True)
    assert (metric_of(host, host), metric_of(host, device), metric_of(device, host)) == ("host", "device", "device")
    assert [status_of(*a) for a in ((0, 0, 5), (0, 0, 0), (0, 2, 0), (3, 0, 0), (2, 2, 1), (2, 2, 0))] == \
        ["changed", "same", "added", "removed", "changed", "same"]
    # [host self, device self, device total]: device total 3 vs self 2 tell which field is read
    assert op_time([1, 2, 3], [4, 5, 0]) == (2, 5) and op_time([1, 2, 0], [4, 5, 6]) == (2, 5)
    assert op_time([1, 2, 1], [4, 5, 0]) == (2, 5) and op_time([1, 2, 0], [4, 5, 1]) == (2, 5)
    assert op_time([1, 2, 0], [4, 5, 0]) == (1, 4)


def test_percentages_near_zero():
    """One side under 1 % of the other: no percentage. 0.005 -> 1 (0.5 %): none; 1 -> 100 (exactly 1 %): a
    percentage, +9900; 1 -> 0.005: none; 100 -> 1 (exactly 1 %): -99; 0 -> 0: none (no base), no word."""
    assert percent_change(0.005, 1) == (None, "")
    assert percent_change(1, 100) == (9900.0, "")
    assert percent_change(1, 0.005) == (None, "")
    assert percent_change(100, 1) == (-99.0, "")
    assert percent_change(0, 0) == (None, "")
    assert percent_change(0, 5, "added") == (None, "new") and percent_change(5, 0, "removed") == (None, "gone")


def test_every_field_of_an_operator_row_per_step():
    """Base: two windows of 2 and 2 steps (4 steps), "mm" in both: calls 4 + 4 = 8 -> 2 per step, host self 40 +
    4 = 44 -> 11, device self 80 + 8 -> 22, device total 120 + 12 -> 33, host total 400 + 44 -> 111. Target one
    window of 1 step, "mm" 1 call, 10 / 20 / 30 / 100. Device total on both sides: time is device self, 22 -> 20,
    -2 (-9.09 %). A ProfilerStep# range first in the table is skipped, not an end of the table."""
    mm = ("ops_by_name", "mm", 4, 40, 80, 120, 400, "[1]", "a.py(1): f")
    step = ("ops_by_name", "ProfilerStep#1", 1, 5, 0, 0, 5, "", "")
    base = [digest(2, [step, mm]), digest(2, [("ops_by_name", "mm", 4, 4, 8, 12, 44, "[1]", "")])]
    target = digest(1, [("ops_by_name", "mm", 1, 10, 20, 30, 100, "[2]", "")])
    r = rows(base, target)
    assert set(r) == {"mm"}
    mm_row = r["mm"]
    assert (mm_row.input_shapes, mm_row.call_stack, mm_row.base_names, mm_row.target_names) == ("", "", ["mm"], ["mm"])
    assert (mm_row.base_calls, mm_row.target_calls, mm_row.base_ns, mm_row.target_ns, mm_row.delta_ns) == (2, 1, 22, 20, -2)
    assert mm_row.delta_pct == pytest.approx(-100 * 2 / 22) and (mm_row.delta_text, mm_row.status) == ("", "changed")
    assert (mm_row.base_host_self_ns, mm_row.target_host_self_ns, mm_row.base_device_self_ns,
            mm_row.target_device_self_ns) == (11, 10, 22, 20)
    assert (mm_row.base_host_total_ns, mm_row.target_host_total_ns, mm_row.base_device_total_ns,
            mm_row.target_device_total_ns) == (111, 100, 33, 30)


def test_modes_shapes_and_stacks():
    """By shape: one row per (name, shapes), the shapes shown; a removed row keeps its baseline's shapes. By name:
    no shapes, no stack even where the table has them. By stack: line numbers dropped. A row of the same time on
    both sides is "same". A mode not known is refused, naming the three; the default mode is by name."""
    base = digest(1, [("ops_by_shape", "mm", 1, 5, 0, 0, 5, "[1]", ""), ("ops_by_shape", "mm", 1, 7, 0, 0, 7, "[9]", ""),
                      ("ops_by_name", "mm", 2, 12, 0, 0, 12, "[1]", "a.py(3): f"),
                      ("ops_by_stack", "mm", 1, 5, 0, 0, 5, "", "a.py(3): f")])
    target = digest(1, [("ops_by_shape", "mm", 1, 5, 0, 0, 5, "[1]", ""),
                        ("ops_by_name", "mm", 1, 5, 0, 0, 5, "[1]", "a.py(4): f"),
                        ("ops_by_stack", "mm", 1, 6, 0, 0, 6, "", "a.py(4): f")])
    shaped = operator_rows(side_of(base), side_of(target), name_map(), "shape")
    assert [(r.input_shapes, r.status, r.delta_ns) for r in shaped] == [("[9]", "removed", -7), ("[1]", "same", 0)]
    (named,) = operator_rows(side_of(base), side_of(target), name_map())
    assert (named.input_shapes, named.call_stack, named.delta_ns) == ("", "", -7)
    (stacked,) = operator_rows(side_of(base), side_of(target), name_map(), "stack")
    assert (stacked.call_stack, stacked.status, stacked.base_ns, stacked.target_ns) == ("a.py: f", "changed", 5, 6)
    with pytest.raises(ValueError, match=r"^operators are matched by one of name, shape, stack, not 'file'$"):
        operator_rows(side_of(base), side_of(target), name_map(), "file")


def test_kernel_rows_have_device_time_only():
    """A kernel's time is device time (total_ns), no host fields, no shapes or stack; per step (2 steps: 60 /
    2 = 30); a kernel of 0 ns stays 0 (no host time to fall back on)."""
    base = digest(2, kernels=[("k", 4, 60), ("z", 1, 0)])
    target = digest(1, kernels=[("k", 1, 10), ("z", 1, 0)])
    r = {x.key: x for x in kernel_rows(side_of(base), side_of(target), name_map())}
    k, z = r["k"], r["z"]
    assert (k.base_ns, k.target_ns, k.base_calls, k.input_shapes, k.call_stack) == (30, 10, 2, "", "")
    assert (k.base_host_self_ns, k.target_host_self_ns, k.base_host_total_ns, k.target_host_total_ns) == (0, 0, 0, 0)
    assert (k.base_device_self_ns, k.base_device_total_ns) == (30, 30)
    assert (z.base_ns, z.target_ns, z.status) == (0, 0, "same")


def node(n):
    return {c.name: c for c in n.children}


def test_tree_sums_kinds_and_statuses():
    """Base, two windows of 1 step (2 steps): "mm" under f <- main in both, 2 calls, host self 6, device self 4,
    device total 5 and 0: per step 2 calls, 6, 4, 2.5. Device total above 0: its time is device self, 4. The
    target (1 step): "mm" 1 call, host 7, device self 4, device total 0: 4 ns, "same" (host 6 -> 7 would be a
    change); "add" 1 call, device self 2, total 3: 2 ns, added; "copy" without a stack and "fill" whose stack
    the digest says it has not: under "(no call stack)". "h", host only, 1 call and 3 ns in each window: 1 call
    and 3 ns per step on both sides, "same". A ProfilerStep# range first is skipped.
    Root: 4 + 3 = 7 -> 4 + 3 + 2 + 4 + 1 = 14 ns, 3 -> 5 calls; f: 7 -> 9 ns, 3 -> 3 calls."""
    stack = "a.py(2): f;a.py(9): main"
    step = ("ProfilerStep#1", "", 1, 100, 0, 0)
    h = ("h", stack, 1, 3, 0, 0)
    base = [digest(1, stacks=[step, ("mm", stack, 2, 6, 4, 5), h]), digest(1, stacks=[("mm", stack, 2, 6, 4, 0), h])]
    target = digest(1, stacks=[("mm", stack, 1, 7, 4, 0), ("add", stack, 1, 9, 2, 3), ("copy", "", 1, 4, 0, 0), h])
    target.ops_by_stack.add(name="fill", call_stack="x.py(1): g", has_call_stack=False, calls=1, host_self_ns=1)
    root = operator_tree(side_of(base), side_of(target), name_map())
    assert (root.name, root.kind, root.base_ns, root.target_ns, root.base_calls, root.target_calls) == \
        ("all operators", "root", 7, 14, 3, 5)
    main = node(root)["a.py: main"]
    f = node(main)["a.py: f"]
    assert (main.kind, f.kind, f.base_calls, f.target_calls, f.base_ns, f.target_ns, f.status) == \
        ("frame", "frame", 3, 3, 7, 9, "changed")
    mm, add = node(f)["mm"], node(f)["add"]
    assert (mm.kind, mm.base_calls, mm.target_calls, mm.base_ns, mm.target_ns, mm.delta_ns, mm.status) == \
        ("op", 2, 1, 4, 4, 0, "same")
    assert (add.kind, add.base_ns, add.target_ns, add.delta_ns, add.status) == ("op", 0, 2, 2, "added")
    assert (node(f)["h"].base_ns, node(f)["h"].target_ns, node(f)["h"].status) == (3, 3, "same")
    loose = node(root)["(no call stack)"]
    assert (loose.kind, sorted(node(loose)), node(loose)["fill"].kind) == ("frame", ["copy", "fill"], "op")


def test_a_deep_stack_is_cut_in_the_middle():
    """64 frames are kept whole; 65 (f0 outermost .. f64 innermost) keep the outer 32 and the inner 31 with
    "… 2 frames …" between (65 - 64 + 1 = 2 left out: f32, f33)."""
    def chain(n):
        frames = ";".join(f"m.py({i}): f{i}" for i in reversed(range(n)))  # innermost first, as stored
        root = operator_tree(side_of(digest(1, stacks=[("op", frames, 1, 1, 0, 0)])), side_of(digest(1)), name_map())
        names = []
        while root.children:
            (root,) = root.children
            names.append(root.name)
        return names
    whole = chain(64)
    assert whole == [f"m.py: f{i}" for i in range(64)] + ["op"]
    cut = chain(65)
    assert cut == [f"m.py: f{i}" for i in range(32)] + ["… 2 frames …"] + [f"m.py: f{i}" for i in range(34, 65)] + ["op"]


def test_the_tree_s_size_bounds():
    """Bounds made small (3 children, 6 nodes), a target only. The root's 3 frames (A 1 + 5 + 2 = 8, B 4, C 1 + 9
    + 1 = 11) are shown whole (3 <= 3), largest first: C, A, B; the budget 6 - 1 - 3 = 2 is left. C (walked
    first) has 3 operators and room 2: its largest (c1, 9) and "(2 more)" (c2 + c3: 2 ns, 2 calls); the budget
    is then 0: A and B get room 0, only "(3 more)" (8 ns, 3 calls) and "(1 more)" (4 ns)."""
    stacks = [("a1", "A", 1, 1, 0, 0), ("a2", "A", 1, 5, 0, 0), ("a3", "A", 1, 2, 0, 0), ("b1", "B", 1, 4, 0, 0),
              ("c2", "C", 1, 1, 0, 0), ("c1", "C", 1, 9, 0, 0), ("c3", "C", 1, 1, 0, 0)]
    kept = tree.MAX_CHILDREN, tree.MAX_NODES
    tree.MAX_CHILDREN, tree.MAX_NODES = 3, 6
    try:
        root = operator_tree(side_of(digest(1)), side_of(digest(1, stacks=stacks)), name_map())
    finally:
        tree.MAX_CHILDREN, tree.MAX_NODES = kept
    assert [(c.name, c.kind, c.target_ns) for c in root.children] == [("C", "frame", 11), ("A", "frame", 8),
                                                                       ("B", "frame", 4)]
    more = [(c.name, c.kind, c.base_ns, c.target_ns, c.base_calls, c.target_calls, c.delta_ns, c.status)
            for c in node(root)["C"].children]
    assert more == [("c1", "op", 0, 9, 0, 1, 9, "added"), ("(2 more)", "more", 0, 2, 0, 2, 2, "added")]
    assert [(c.name, c.kind, c.target_ns, c.target_calls) for c in node(root)["A"].children] == \
        [("(3 more)", "more", 8, 3)]
    assert [(c.name, c.target_ns) for c in node(root)["B"].children] == [("(1 more)", 4)]


def test_children_ordered_by_the_size_of_their_change_then_name():
    """|delta| largest first whatever the sign or the order of the table (b -7, d +5, a +3 and c -3 tied: by name;
    e 0 last); the base's calls (9 on e) do not count."""
    base = digest(1, stacks=[("e", "", 9, 1, 0, 0), ("c", "", 1, 4, 0, 0), ("b", "", 1, 8, 0, 0)])
    target = digest(1, stacks=[("e", "", 9, 1, 0, 0), ("a", "", 1, 3, 0, 0), ("c", "", 1, 1, 0, 0),
                               ("d", "", 1, 5, 0, 0), ("b", "", 1, 1, 0, 0)])
    (loose,) = operator_tree(side_of(base), side_of(target), name_map()).children
    assert [(c.name, c.delta_ns) for c in loose.children] == [("b", -7), ("d", 5), ("a", 3), ("c", -3), ("e", 0)]
