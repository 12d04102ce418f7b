"""The nn.Module tree (analysis/modules.py) on a hand-made table: every field of every node worked out by
hand in the docstring (times in ns), so that a one-token change in modules.py shows (issue 46)."""
from _synthetic import ev, table

from canning_tb.analysis.context import Context
from canning_tb.analysis.modules import module_tree
from canning_tb.ingest.table import Kind as K


def _m(name, ts, dur, **kw):
    return ev("nn.Module: " + name, K.PYTHON_FUNCTION, ts, dur, **kw)


def _op(name, ts, dur, ext):
    return ev(name, K.CPU_OP, ts, dur, external_id=ext)


def _tree():
    """Thread 1, around it all a python function that is no module (train.py, 0-2000):
    Net_0 0-1000 > Block_1 10-400 > aten::linear 20-120 (ext 1, kernel 50) > aten::addmm 30-100 (ext 2, 20)
                                  > Linear_2 150-300 > aten::mm 160-260 (ext 3, 70)
                 > aten::relu 450-500 (ext 4, 5)
                 > Block_1 600-900 > aten::linear 610-700 (ext 5, 11)
                 > Head_3 920-980
    Loss_4 1100-1200 > Block_1 1110-1150 > aten::neg 1120-1130 (ext 7, 2)
    aten::add 1500-1600 (ext 6, kernel 3): in no module."""
    k = [(1, 50), (2, 20), (3, 70), (4, 5), (5, 11), (6, 3), (7, 2)]
    return table([
        ev("train.py(1): main", K.PYTHON_FUNCTION, 0, 2000),
        _m("Net_0", 0, 1000), _m("Block_1", 10, 390), _op("aten::linear", 20, 100, 1), _op("aten::addmm", 30, 70, 2),
        _m("Linear_2", 150, 150), _op("aten::mm", 160, 100, 3), _op("aten::relu", 450, 50, 4),
        _m("Block_1", 600, 300), _op("aten::linear", 610, 90, 5), _m("Head_3", 920, 60),
        _m("Loss_4", 1100, 100), _m("Block_1", 1110, 40), _op("aten::neg", 1120, 10, 7),
        _op("aten::add", 1500, 100, 6),
    ] + [ev(f"k{e}", K.KERNEL, 3000 + 100 * e, d, external_id=e) for e, d in k])


def test_module_tree_every_field():
    """Net_0: host 1000, self 1000 - (390 + 300 + 60) = 250; device self relu's 5; total 5 + 151 = 156; one
    operator (relu). Net_0/Block_1: 2 calls, 390 + 300 = 690, self 690 - 150 = 540; device self linear 50 +
    addmm 20 (inside linear, whose module it is) + linear 11 = 81, total 81 + 70 = 151; operators the two
    linears (addmm is inside an op). Linear_2: 150, device 70, one op. Head_3: 60, nothing. Loss_4: 100,
    self 100 - 40 = 60, device 0 + 2. Loss_4/Block_1 (another path than Net_0's): 40, neg's 2.
    Depth first, siblings by first call."""
    got = [(m.path, m.name, m.depth, m.parent, m.calls, m.host_total_ns, m.host_self_ns, m.device_self_ns,
            m.device_total_ns, m.operators, m.first_start_ns) for m in module_tree(Context(_tree()))]
    assert got == [
        ("Net_0", "Net_0", 0, -1, 1, 1000, 250, 5, 156, 1, 0),
        ("Net_0/Block_1", "Block_1", 1, 0, 2, 690, 540, 81, 151, 2, 10),
        ("Net_0/Block_1/Linear_2", "Linear_2", 2, 1, 1, 150, 150, 70, 70, 1, 150),
        ("Net_0/Head_3", "Head_3", 1, 0, 1, 60, 60, 0, 0, 0, 920),
        ("Loss_4", "Loss_4", 0, -1, 1, 100, 60, 0, 2, 0, 1100),
        ("Loss_4/Block_1", "Block_1", 1, 4, 1, 40, 40, 2, 2, 1, 1110),
    ]


def test_siblings_by_first_call_not_by_row():
    """Root B_1 first called at 500 and again at 10 (A_0 at 100): B_1's first call is 10, so B_1 comes first;
    A_0's child C_2 (first at 120) and D_3 (first at 110, again at 130) under it: D_3 first."""
    t = table([_m("B_1", 500, 10), _m("A_0", 100, 100), _m("C_2", 120, 5), _m("D_3", 110, 5), _m("D_3", 130, 5),
               _m("B_1", 10, 10)])
    assert [(m.path, m.calls, m.first_start_ns) for m in module_tree(Context(t))] == [
        ("B_1", 2, 10), ("A_0", 1, 100), ("A_0/D_3", 2, 110), ("A_0/C_2", 1, 120)]


def test_no_modules():
    t = table([ev("train.py(1): main", K.PYTHON_FUNCTION, 0, 10), _op("aten::add", 0, 5, 1)])
    assert module_tree(Context(t)) == []
    # a module call on the device (GPU_USER_ANNOTATION-like rows carry a device): not a module of the host
    t = table([ev("nn.Module: X_0", K.PYTHON_FUNCTION, 0, 10, device=0)])
    assert module_tree(Context(t)) == []
    # module-like names of other kinds: not module calls
    t = table([ev("nn.Module: X_0", K.USER_ANNOTATION, 0, 10)])
    assert module_tree(Context(t)) == []


def test_modules_without_host_ops_and_other_threads():
    """Modules on two threads: each thread's calls nest on their own; a module without ops or kernels."""
    t = table([_m("A_0", 0, 100), _m("B_1", 10, 50, tid=2), _m("C_2", 20, 10)])
    assert [(m.path, m.host_self_ns, m.device_total_ns) for m in module_tree(Context(t))] == [
        ("A_0", 90, 0), ("A_0/C_2", 10, 0), ("B_1", 50, 0)]


def test_one_module_call_and_a_kernel_nobody_launched():
    """One module call M_0 0-100 > aten::mul (ext 1, kernel 7); a kernel no op launched (11): not M_0's."""
    t = table([_m("M_0", 0, 100), _op("aten::mul", 10, 20, 1), ev("k", K.KERNEL, 500, 7, external_id=1),
               ev("lost", K.KERNEL, 600, 11)])
    assert [(m.path, m.calls, m.host_self_ns, m.device_self_ns, m.device_total_ns, m.operators)
            for m in module_tree(Context(t))] == [("M_0", 1, 100, 7, 7, 1)]


def test_child_time_reaches_the_root_and_self_floors_at_zero():
    """M_0 10-100 > C_1 10-50 (> aten::neg, ext 2, kernel 3) and D_2 50-100 (starts as C_1 ends: a sibling):
    M_0's host self 90 - 40 - 50 = 0; device total 3 from its child."""
    t = table([_m("M_0", 10, 90), _m("C_1", 10, 40), _op("aten::neg", 20, 10, 2), _m("D_2", 50, 50),
               ev("k", K.KERNEL, 500, 3, external_id=2)])
    assert [(m.path, m.host_self_ns, m.device_self_ns, m.device_total_ns) for m in module_tree(Context(t))] == [
        ("M_0", 0, 0, 3), ("M_0/C_1", 40, 3, 3), ("M_0/D_2", 50, 0, 0)]


def test_an_op_two_levels_inside_a_module_is_its_own():
    """M_0 0-100 > aten::mul 10-50 > aten::inner 20-30 (ext 1, kernel 7): the kernel is M_0's (its innermost
    module call, two ops up); one operator directly inside (mul)."""
    t = table([_m("M_0", 0, 100), _op("aten::mul", 10, 40, -1), _op("aten::inner", 20, 10, 1),
               ev("k", K.KERNEL, 500, 7, external_id=1)])
    assert [(m.device_self_ns, m.operators) for m in module_tree(Context(t))] == [(7, 1)]
