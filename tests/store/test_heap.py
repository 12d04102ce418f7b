"""store/heap.reuse_freed_memory, measured in fresh processes by the kernel's own count of page faults
(getrusage). In a process that asked for it (tune_this_process: the CLI's batch commands, the digest
children): outside it, each new array of 1-3.4 MiB after a freed one faults its pages again (glibc gave the
freed one back); inside, the freed block is reused (a tenth of the faults at most); after it, the free heap is
given back (RSS falls by the 128 MiB freed inside). In a long-lived host that never asked (TensorBoard, the MCP
server), a digest leaves the allocator as it found it: glibc's adaptive mmap threshold still lets a 4 MiB
array be reused round after round. glibc only: elsewhere the function changes nothing, and the test says so."""
import json
import subprocess
import sys
import textwrap

import pytest
from conftest import fixture_path

from canning_tb.store import heap

pytestmark = pytest.mark.skipif(heap._LIBC is None, reason="not glibc: reuse_freed_memory changes nothing here")

PROBE = textwrap.dedent("""
    import json, resource
    import numpy as np
    from canning_tb.store.heap import reuse_freed_memory, tune_this_process

    MIB = 1 << 20
    tune_this_process()  # as a batch command or a digest child does

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

# A host's process: a Store built as the plugin builds it (scanner.default_store, without its background
# timeline index) digests a small window in this very process; the same allocation rounds before and after.
HOST = textwrap.dedent("""
    import json, resource, sys, tempfile
    import numpy as np

    ROUNDS, SIZE = 300, 4 << 20

    def rounds():
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(ROUNDS):
            a = np.empty(SIZE, np.uint8)
            a.fill(1)  # every page written
            del a
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    if __name__ == "__main__":
        from canning_tb.store.scanner import ISOLATE_BYTES
        from canning_tb.store.store import Store
        rounds()  # the first rounds raise glibc's threshold to 4 MiB
        before = rounds()
        with tempfile.TemporaryDirectory() as cache:
            store = Store(sys.argv[1], cache_dir=cache, isolate_bytes=ISOLATE_BYTES)
            run = store.runs()[0]
            worker = store.workers(run)[0].name
            window = store.windows(run, worker)[0]
            in_process = not store._isolate(window)
            store.digest(run, worker, window.id)
        after = rounds()
        print(json.dumps({"pages": ROUNDS * SIZE // 4096, "before": before, "after": after, "here": in_process}))
""")


def _probe(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_freed_blocks_are_reused_inside_and_given_back_after():
    got = _probe(PROBE)
    assert got["outside"] >= got["pages"] // 2, got  # glibc gave each freed one back: the next faulted again
    assert got["inside"] < got["outside"] // 10, got  # the freed block reused
    assert got["held_kb"] - got["after_kb"] > 64 << 10, got  # the kept 128 MiB given back at the end


def test_a_long_lived_host_allocates_as_before_after_a_digest():
    """With the thresholds set by hand (and set "back" to 128 KiB) every later 4 MiB array was mmapped
    afresh: about one fault per page written (154k of 307k pages here, numpy's huge-page advice halving
    it), against a few hundred with glibc's own adaptive threshold."""
    got = _probe(HOST, str(fixture_path("kineto", "resnet50_v100")))
    assert got["here"], got  # the digest ran in this process, as a small window does in TensorBoard
    assert got["before"] < got["pages"] // 100, got  # the adaptive threshold at work: freed arrays reused
    assert got["after"] < got["before"] + got["pages"] // 100, got


class _Recorder:
    """Stands in for glibc: the calls reuse_freed_memory makes, none of them reaching the allocator."""

    def __init__(self):
        self.calls = []

    def mallopt(self, param, value):
        self.calls.append(("mallopt", param, value))

    def malloc_trim(self, pad):
        self.calls.append(("malloc_trim", pad))


def test_a_process_that_did_not_ask_is_left_alone(monkeypatch):
    libc = _Recorder()
    monkeypatch.setattr(heap, "_LIBC", libc)
    monkeypatch.setattr(heap, "_tuning", False)
    with heap.reuse_freed_memory():
        pass
    assert libc.calls == []


def test_nested_uses_set_once_and_restore_only_at_the_last_exit(monkeypatch):
    libc = _Recorder()
    monkeypatch.setattr(heap, "_LIBC", libc)
    monkeypatch.setattr(heap, "_tuning", False)
    heap.tune_this_process()
    gib, kib128 = 1 << 30, 128 << 10
    with heap.reuse_freed_memory():
        with heap.reuse_freed_memory():
            assert libc.calls == [("mallopt", -3, gib), ("mallopt", -1, gib)]
        assert len(libc.calls) == 2  # the inner exit restores nothing
    assert libc.calls[2:] == [("mallopt", -3, kib128), ("mallopt", -1, kib128), ("malloc_trim", 0)]
