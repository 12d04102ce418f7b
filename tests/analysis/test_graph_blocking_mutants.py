"""Which device work a blocking host call waited for, and which event on another stream held a kernel
(analysis/graph/build.py `_blocking`, `_cross_stream`), on windows made by hand (issue 46: the 130 mutants of
these two functions, not run before). Every expected node is worked out in the docstrings (times in ns)."""
import numpy as np

from canning_tb.analysis.context import Context
from canning_tb.analysis.graph.build import CATS, CROSS_STREAM, build_graph
from canning_tb.ingest.table import Kind
from _synthetic import ev, table

NONE = -1


def _graph(events):
    t = table([ev("ProfilerStep#1", Kind.USER_ANNOTATION, 0, 100_000)] + events)
    return t, build_graph(t, Context(t))


def _names(t, g) -> list[str]:
    """Per node, the name of its event ("-" for none)."""
    return [t.strings[int(t.events["name"][r])] if r >= 0 else "-" for r in g.row.tolist()]


def _node(t, g, name, start):
    """The node of the event `name` that starts at `start`."""
    names = _names(t, g)
    (i,) = [i for i, (n, s) in enumerate(zip(names, g.start.tolist())) if n == name and s == start]
    return i


def _waits(t, g):
    """{(name, start) of each blocking call's atom: (name of the device node it waited for, tail)}."""
    names = _names(t, g)
    return {(names[i], int(g.start[i])): (names[int(g.wait_on[i])] if g.wait_on[i] != NONE else None,
                                         int(g.wait_tail[i]))
            for i in np.flatnonzero(g.cat == CATS.index("sync")).tolist()}


def test_two_blocking_calls_each_wait_for_their_own_kernel_and_a_cut_call_only_at_its_end():
    """Thread 1: cudaStreamSynchronize 100-300; launches 310-315 (k2) and 320-325 (k3); cudaDeviceSynchronize 430-900
    cut by cudaGetLastError 600-605 into two atoms (430-600 and 605-900). Device: k1 50-250 (stream 7, launched 10-20),
    k2 330-550 (stream 7), k3 340-850 (stream 20).
    The first call returned at 300: the work that ended last before it is k1 (250), running when the call began (100):
    it waited for k1 and took 50 more. The second call returns from its last atom (605-900): of the work ended by 900,
    k3 (850) ended last, running at 430: k3, tail 50. Its first atom (430-600) is not where it
    returned: no wait (k2, which ended at 550 inside it, is not its wait)."""
    t, g = _graph([
        ev("cudaLaunchKernel", Kind.RUNTIME, 10, 10, correlation=1),
        ev("cudaStreamSynchronize", Kind.RUNTIME, 100, 200),
        ev("cudaLaunchKernel", Kind.RUNTIME, 310, 5, correlation=2),
        ev("cudaLaunchKernel", Kind.RUNTIME, 320, 5, correlation=3),
        ev("cudaDeviceSynchronize", Kind.RUNTIME, 430, 470), ev("cudaGetLastError", Kind.RUNTIME, 600, 5),
        ev("k1", Kind.KERNEL, 50, 200, correlation=1), ev("k2", Kind.KERNEL, 330, 220, correlation=2),
        ev("k3", Kind.KERNEL, 340, 510, correlation=3, stream=20),
    ])
    assert _waits(t, g) == {("cudaStreamSynchronize", 100): ("k1", 50), ("cudaDeviceSynchronize", 430): (None, 0),
                            ("cudaDeviceSynchronize", 605): ("k3", 50)}


def test_a_call_that_began_after_the_device_work_ended_waited_for_nothing():
    """k 0-100 (launched 0-5, before anything) ends before cudaStreamSynchronize 200-300 begins: nothing ran during
    the call, no wait; a kernel ending exactly as the call begins (k 150-200 in the second window) did not run during
    it either."""
    t, g = _graph([ev("cudaLaunchKernel", Kind.RUNTIME, 0, 5, correlation=1),
                   ev("cudaStreamSynchronize", Kind.RUNTIME, 200, 100), ev("k", Kind.KERNEL, 6, 94, correlation=1)])
    assert _waits(t, g) == {("cudaStreamSynchronize", 200): (None, 0)}
    t, g = _graph([ev("cudaLaunchKernel", Kind.RUNTIME, 0, 5, correlation=1),
                   ev("cudaStreamSynchronize", Kind.RUNTIME, 200, 100), ev("k", Kind.KERNEL, 150, 50, correlation=1)])
    assert _waits(t, g) == {("cudaStreamSynchronize", 200): (None, 0)}


def test_a_kernel_ending_exactly_as_the_call_returns_is_its_wait_with_no_tail():
    """k 150-300 and cudaStreamSynchronize 200-300: the call returned as k ended (300 is 'before it returned'): it
    waited for k, tail 0."""
    t, g = _graph([ev("cudaLaunchKernel", Kind.RUNTIME, 0, 5, correlation=1),
                   ev("cudaStreamSynchronize", Kind.RUNTIME, 200, 100), ev("k", Kind.KERNEL, 150, 150, correlation=1)])
    assert _waits(t, g) == {("cudaStreamSynchronize", 200): ("k", 0)}


def _held_by(t, g, name, start):
    k = _node(t, g, name, start)
    names = _names(t, g)
    return [names[int(g.dep_src[d])] for d in range(g.dep_ptr[k], g.dep_ptr[k + 1]) if g.dep_kind[d] == CROSS_STREAM]


def test_an_event_ending_exactly_as_the_held_kernel_starts_held_it():
    """gemm launched 0-1 starts at 50001 (held: 50000 > 2000 after its launch); the NCCL kernel on stream 20 runs
    3-50001, ending exactly as gemm starts (0 ns before: within 10000): it held gemm."""
    t, g = _graph([ev("cudaLaunchKernel", Kind.RUNTIME, 0, 1, correlation=1),
                   ev("cudaLaunchKernel", Kind.RUNTIME, 2, 1, correlation=2),
                   ev("ncclKernel", Kind.COMM_KERNEL, 3, 49_998, correlation=2, stream=20),
                   ev("gemm", Kind.KERNEL, 50_001, 10, correlation=1)])
    assert _held_by(t, g, "gemm", 50_001) == ["ncclKernel"]


def test_the_nearest_event_of_another_device_is_passed_over_for_the_next_on_the_same_device():
    """gemm (stream 7, device 0) launched 0-1 starts at 50001 (held). The event that ended nearest before it is a copy
    on device 1 (stream 30, 4-47001: 3000 before): not on gemm's device, passed over; the next one back, the NCCL kernel
    on stream 20 of device 0 (3-45001: 5000 before, within 10000), held it."""
    t, g = _graph([ev("cudaLaunchKernel", Kind.RUNTIME, 0, 1, correlation=1),
                   ev("cudaLaunchKernel", Kind.RUNTIME, 2, 1, correlation=2),
                   ev("cudaMemcpyAsync", Kind.RUNTIME, 3, 1, correlation=3),
                   ev("ncclKernel", Kind.COMM_KERNEL, 3, 44_998, correlation=2, stream=20),
                   ev("Memcpy DtoD (Device -> Device)", Kind.MEMCPY, 4, 46_997, correlation=3, stream=30, device=1),
                   ev("gemm", Kind.KERNEL, 50_001, 10, correlation=1)])
    assert _held_by(t, g, "gemm", 50_001) == ["ncclKernel"]
