"""store/heap.reuse_freed_memory, measured in a fresh process by the kernel's own count of page faults
(getrusage): outside it, each new array of 1-3.4 MiB after a freed one faults its pages again (glibc gave the
freed one back); inside, the freed block is reused (a tenth of the faults at most); after it, the free
heap is given back (RSS falls by the 128 MiB freed inside). glibc only: elsewhere the function changes nothing, and the test says so."""
import subprocess
import sys
import textwrap

import pytest

from canning_tb.store import heap

pytestmark = pytest.mark.skipif(heap._LIBC is None, reason="not glibc: reuse_freed_memory changes nothing here")

PROBE = textwrap.dedent("""
    import json, resource
    import numpy as np
    from canning_tb.store.heap import reuse_freed_memory

    MIB = 1 << 20

    def faults(run):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        run()
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    SIZES = [MIB + i * MIB // 10 for i in range(25)]  # 1 to 3.4 MiB: under numpy's 4 MiB huge-page advice

    def one_after_another():  # each written and freed before the next, each a little bigger (over glibc's
        for size in SIZES:     # threshold, which rises to the last freed size: mmapped, given back)
            a = np.ones(size, np.uint8)
            del a

    def rss_kb():
        return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1])

    outside = faults(one_after_another)
    with reuse_freed_memory():
        inside = faults(one_after_another)
        many = [np.ones(MIB, np.uint8) for _ in range(128)]
        del many  # 128 MiB freed, kept in the heap
        held = rss_kb()
    after = rss_kb()
    print(json.dumps({"pages": sum(SIZES) // 4096, "outside": outside, "inside": inside, "held_kb": held, "after_kb": after}))
""")


def test_freed_blocks_are_reused_inside_and_given_back_after():
    import json
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["outside"] >= got["pages"] // 2, got  # glibc gave each freed one back: the next faulted again
    assert got["inside"] < got["outside"] // 10, got  # the freed block reused
    assert got["held_kb"] - got["after_kb"] > 64 << 10, got  # the kept 128 MiB given back at the end


def test_nested_uses_restore_only_at_the_last_exit():
    with heap.reuse_freed_memory():
        with heap.reuse_freed_memory():
            assert heap._active == 2
        assert heap._active == 1
    assert heap._active == 0
