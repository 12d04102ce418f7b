"""The cache key of a window (store/cache.py window_key): what makes a cached digest another window's.

By hand on files written here: the key changes with the window's status (a torch_npu folder turns
from "analysing" to "ready" with no file changing), its format and schema, each file's size (even
with its mtime put back), mtime and path; it does not change for SQLite's -shm / -journal, nor an
empty -wal, and a -wal counts by its size only. Written against one-line bugs the suite let pass
(issue 24, item 7): the key without the status (an analysing window stays "analysing") or without
the file size.
"""
import dataclasses
import os

import pytest

from canning_tb.store import cache
from canning_tb.store.discover import Window


@pytest.fixture
def window(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    trace = run / "w.pt.trace.json"
    trace.write_text('{"traceEvents": []}')
    return Window(id="w", label="w", format="kineto", path=str(trace), files=(str(trace),)), str(tmp_path)


def _key(w, root, schema=7):
    return cache.window_key(w, schema, root)


def test_status_format_and_schema_are_in_the_key(window):
    w, root = window
    key = _key(w, root)
    assert _key(w, root) == key  # the same window, the same key
    analysing = dataclasses.replace(w, status="analysing")
    assert _key(analysing, root) != key
    assert _key(dataclasses.replace(w, status="incomplete"), root) not in (key, _key(analysing, root))
    assert _key(dataclasses.replace(w, format="ascend"), root) != key
    assert _key(w, root, schema=8) != key


def test_a_file_of_another_size_is_another_window_even_with_its_mtime_put_back(window):
    w, root = window
    (path,) = w.files
    st = os.stat(path)
    key = _key(w, root)
    with open(path, "r+b") as f:  # in place: same inode
        f.write(b'{"traceEvents": [ ]}')
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_ino == st.st_ino and os.stat(path).st_mtime_ns == st.st_mtime_ns
    assert _key(w, root) != key


def test_mtime_and_path_are_in_the_key(window, tmp_path):
    w, root = window
    (path,) = w.files
    key = _key(w, root)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert _key(w, root) != key
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _key(w, root) == key
    # the same file seen from another logdir root: another path within it
    assert _key(w, str(tmp_path / "run")) != key
    missing = dataclasses.replace(w, files=(path + ".gone",))
    assert _key(missing, root) != key


def test_sqlite_bookkeeping_files_do_not_change_the_key(window):
    w, root = window
    (path,) = w.files
    db = path + ".db"
    with open(db, "wb") as f:
        f.write(b"x" * 10)
    sides = {s: db + s for s in ("-shm", "-journal", "-wal")}
    for side in sides.values():
        open(side, "wb").close()
    with_db = dataclasses.replace(w, files=(path, db))
    key = _key(with_db, root)
    with_sides = dataclasses.replace(w, files=(path, db, *sides.values()))
    assert _key(with_sides, root) == key  # -shm, -journal and an empty -wal: none of them counts
    with open(sides["-shm"], "wb") as f:
        f.write(b"y" * 100)
    assert _key(with_sides, root) == key
    with open(sides["-wal"], "wb") as f:
        f.write(b"z" * 8)
    grown = _key(with_sides, root)
    assert grown != key
    os.utime(sides["-wal"], ns=(1, 1))  # a reader touching the -wal changes nothing
    assert _key(with_sides, root) == grown
