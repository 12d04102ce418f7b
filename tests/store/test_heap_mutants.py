"""store/heap.py under mutation (issue 46), with a stand-in C library that records each call: what
reuse_freed_memory sets and restores, nested and only in a process that asked (tune_this_process).
The numbers are glibc's (malloc.h): M_TRIM_THRESHOLD is -1, M_MMAP_THRESHOLD is -3, both thresholds
start at 128 KiB (131,072 bytes); the kept size is 1 GiB (1,073,741,824 bytes). Whether the tuning
saves page faults is test_heap.py's (a child process counts them)."""
import pytest

from canning_tb.store import heap

KEEP, DEFAULT = 1_073_741_824, 131_072


class Libc:
    def __init__(self):
        self.calls = []

    def mallopt(self, param, value):
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad):
        self.calls.append(("malloc_trim", pad))
        return 1


@pytest.fixture
def libc(monkeypatch):
    fake = Libc()
    monkeypatch.setattr(heap, "_LIBC", fake)
    monkeypatch.setattr(heap, "_tuning", False)
    monkeypatch.setattr(heap, "_active", 0)
    return fake


def test_nothing_changes_unless_the_process_asked(libc):
    with heap.reuse_freed_memory():
        pass
    assert libc.calls == []


def test_set_on_the_way_in_restored_and_trimmed_by_the_last_one_out(libc):
    heap.tune_this_process()
    assert heap._tuning is True
    with heap.reuse_freed_memory():
        assert libc.calls == [("mallopt", -3, KEEP), ("mallopt", -1, KEEP)]
        with heap.reuse_freed_memory():  # nested: nothing set again
            pass
        assert len(libc.calls) == 2 and heap._active == 1
    assert libc.calls[2:] == [("mallopt", -3, DEFAULT), ("mallopt", -1, DEFAULT), ("malloc_trim", 0)]
    assert heap._active == 0


def test_restored_when_the_work_raises_and_as_a_decorator(libc):
    heap.tune_this_process()

    @heap.reuse_freed_memory()
    def work():
        raise ValueError("bad window")
    with pytest.raises(ValueError):
        work()
    assert [c[0] for c in libc.calls] == ["mallopt"] * 4 + ["malloc_trim"] and heap._active == 0


def test_without_glibc_nothing_is_called(monkeypatch):
    monkeypatch.setattr(heap, "_LIBC", None)
    monkeypatch.setattr(heap, "_tuning", True)
    with heap.reuse_freed_memory():
        pass  # no library to call: no error


def test_glibc_is_found_here_and_another_library_is_not_taken_for_it(monkeypatch):
    import ctypes
    assert heap._glibc() is not None  # this machine runs Debian: glibc

    def library(*names):
        """A C library that has only the symbols `names`."""
        class Library:
            def __init__(self, path):
                pass

            def __getattr__(self, name):
                if name in names:
                    return lambda *a: 0
                raise AttributeError(name)
        return Library
    monkeypatch.setattr(ctypes, "CDLL", library("mallopt", "malloc_trim"))  # musl: no gnu_get_libc_version
    assert heap._glibc() is None
    monkeypatch.setattr(ctypes, "CDLL", library("gnu_get_libc_version", "malloc_trim"))
    assert heap._glibc() is None
    monkeypatch.setattr(ctypes, "CDLL", library("gnu_get_libc_version", "mallopt"))
    assert heap._glibc() is None
    monkeypatch.setattr(ctypes, "CDLL", library("gnu_get_libc_version", "mallopt", "malloc_trim"))
    assert heap._glibc() is not None

    def missing(name):
        raise OSError("no libc")
    monkeypatch.setattr(ctypes, "CDLL", missing)
    assert heap._glibc() is None
