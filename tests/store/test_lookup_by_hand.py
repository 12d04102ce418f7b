"""store/lookup.py on windows and digests made by hand: which digest at the source is fresh (the sizes the
manifest records, else its time against every file's), which revision it records, which one the viewer may
serve, and the order load() tries the source and the cache in (issue 46: fast tests for a mutation run).
The digests here are protobuf messages written by the test, with a schema and a revision chosen by it."""
import os

import pytest

from canning_tb.analysis import digest_pb2
from canning_tb.analysis.digest import SCHEMA_VERSION, analysis_revision
from canning_tb.store import lookup
from canning_tb.store.discover import Window

OTHER = "0123456789ab"  # a revision no code of ours has


@pytest.fixture(autouse=True)
def fresh_memo(monkeypatch):
    monkeypatch.setattr(lookup, "_revisions", type(lookup._revisions)(16))  # no file version read before


def put(path, data=b"x", mtime_s=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime_s is not None:
        os.utime(path, (mtime_s, mtime_s))
    return path


def digest(path, schema=SCHEMA_VERSION, revision=None, mean=0, mtime_s=None):
    d = digest_pb2.Digest(schema_version=schema, analysis_revision=analysis_revision() if revision is None else revision)
    d.average.total_ns = mean
    return put(path, d.SerializeToString(), mtime_s)


def window(tmp_path, files, sizes=(), fmt="canning"):
    manifest = put(tmp_path / "w.1.canning.json", b"{}", 1000)
    return Window(id="1", label="", format=fmt, path=str(manifest), files=(str(manifest), *map(str, files)),
                  sizes=tuple((str(p), n) for p, n in sizes))


def test_only_our_handlers_windows_have_a_digest_at_the_source(tmp_path):
    trace = put(tmp_path / "w.1.pt.trace.json", b"abc", 1000)
    digest(tmp_path / "w.1.digest.pb", mtime_s=2000)
    assert lookup.source_digest_path(window(tmp_path, [trace])) == str(tmp_path / "w.1.digest.pb")
    assert lookup.source_digest_path(window(tmp_path, [trace], fmt="kineto")) is None
    assert lookup.fresh_source_digest(window(tmp_path, [trace], fmt="kineto")) is None
    os.remove(tmp_path / "w.1.digest.pb")
    assert lookup.fresh_source_digest(window(tmp_path, [trace])) is None  # none written


def test_a_source_digest_is_fresh_when_the_recorded_sizes_match_whatever_the_times(tmp_path):
    trace = put(tmp_path / "w.1.pt.trace.json", b"abc", 3000)  # copied later (cp -r): newer than the digest
    digest(tmp_path / "w.1.digest.pb", mtime_s=2000)
    src = str(tmp_path / "w.1.digest.pb")
    assert lookup.fresh_source_digest(window(tmp_path, [trace], sizes=[(trace, 3)])) == src
    # one size of two differs: the times decide, and the trace is newer
    names = put(tmp_path / "w.1.names.json", b"{}", 1000)
    assert lookup.fresh_source_digest(window(tmp_path, [trace, names], sizes=[(trace, 3), (names, 3)])) is None
    # a recorded file gone: the times decide (over the files still there)
    assert lookup.fresh_source_digest(window(tmp_path, [trace], sizes=[(tmp_path / "gone", 1)])) is None


@pytest.mark.parametrize("digest_s, newest_s, fresh", [(2000, 1999, True), (2000, 2000, True), (2000, 2001, False)])
def test_without_sizes_a_source_digest_is_fresh_when_as_new_as_every_file(tmp_path, digest_s, newest_s, fresh):
    old = put(tmp_path / "npu" / "a.csv", b"1", 1000)
    new = put(tmp_path / "npu" / "b.csv", b"2", newest_s)
    digest(tmp_path / "w.1.digest.pb", mtime_s=digest_s)
    got = lookup.fresh_source_digest(window(tmp_path, [old, new, tmp_path / "npu" / "gone.csv"]))
    assert got == (str(tmp_path / "w.1.digest.pb") if fresh else None)


def test_the_revision_a_source_digest_records(tmp_path):
    assert lookup.source_revision(str(digest(tmp_path / "a.pb", revision=OTHER))) == OTHER
    assert lookup.source_revision(str(digest(tmp_path / "b.pb", revision=""))) == ""  # code older than the field
    assert lookup.source_revision(str(digest(tmp_path / "c.pb", schema=SCHEMA_VERSION - 1, revision=OTHER))) is None
    assert lookup.source_revision(str(put(tmp_path / "d.pb", b"\xff\xff\xff"))) is None  # not a digest
    assert lookup.source_revision(str(tmp_path / "none.pb")) is None


def test_the_revision_is_read_once_per_version_of_the_file(tmp_path):
    path = digest(tmp_path / "a.pb", revision=OTHER, mtime_s=1000)
    assert lookup.source_revision(str(path)) == OTHER
    digest(path, revision="fedcba987654", mtime_s=1000)  # rewritten in place: the same size, time and inode
    assert lookup.source_revision(str(path)) == OTHER  # the memo's answer
    os.utime(path, (1001, 1001))
    assert lookup.source_revision(str(path)) == "fedcba987654"


@pytest.mark.parametrize("revision, at_hand, current_only, served", [
    (None, True, False, True),  # this code's: served
    (None, True, True, True),
    (OTHER, True, False, False),  # other code's, the trace here: made again
    (OTHER, False, False, True),  # ... not here (a remote trace not copied): served, marked old
    (OTHER, False, True, False),  # canning-prof digest's question: only this code's counts
    ("", False, False, True),
])
def test_which_source_digest_may_be_served(tmp_path, revision, at_hand, current_only, served):
    trace = tmp_path / "w.1.pt.trace.json"
    if at_hand:
        put(trace, b"abc", 1000)
    src = digest(tmp_path / "w.1.digest.pb", revision=revision, mtime_s=2000)
    got = lookup.usable_source_digest(window(tmp_path, [trace], sizes=[(trace, 3)] if at_hand else ()), current_only)
    assert got == (str(src) if served else None)


def test_files_at_hand_means_every_file_and_at_least_one(tmp_path):
    a = put(tmp_path / "a")
    assert lookup.files_at_hand(Window(id="1", label="", format="kineto", path=str(a), files=(str(a),)))
    assert not lookup.files_at_hand(Window(id="1", label="", format="kineto", path=str(a), files=(str(a), str(tmp_path / "b"))))
    assert not lookup.files_at_hand(Window(id="1", label="", format="kineto", path=str(a), files=()))
    assert not lookup.files_at_hand(Window(id="1", label="", format="kineto", path=str(a), files=(str(tmp_path),)))


def test_load_takes_the_source_first_then_the_cache(tmp_path):
    trace = put(tmp_path / "w.1.pt.trace.json", b"abc", 1000)
    w = window(tmp_path, [trace], sizes=[(trace, 3)])
    cache = digest(tmp_path / "cache" / "k.pb", mean=222, mtime_s=500)
    assert lookup.load(w, str(cache), digest_pb2.Digest).average.total_ns == 222  # no source digest yet
    assert os.stat(cache).st_mtime > 500  # a cache entry read is marked used (eviction's clock)
    digest(tmp_path / "w.1.digest.pb", mean=111, mtime_s=2000)
    assert lookup.load(w, str(cache), digest_pb2.Digest).average.total_ns == 111
    put(tmp_path / "w.1.digest.pb", b"\xff\xff\xff", 2000)  # unreadable at the source: the cache
    os.utime(cache, (500, 500))
    assert lookup.load(w, str(cache), digest_pb2.Digest).average.total_ns == 222
    digest(cache, schema=SCHEMA_VERSION - 1, mean=333, mtime_s=500)  # another schema: none
    assert lookup.load(w, str(cache), digest_pb2.Digest) is None
    assert os.stat(cache).st_mtime == 500  # not used: not touched
    assert lookup.load(w, str(tmp_path / "nothing.pb"), digest_pb2.Digest) is None


def test_load_serves_another_codes_digest_when_the_trace_is_not_here(tmp_path):
    """A remote window whose trace was not copied here: its digest at the source is served (marked old by the views)."""
    trace = tmp_path / "w.1.pt.trace.json"  # named by the manifest, not here
    digest(tmp_path / "w.1.digest.pb", revision=OTHER, mean=444, mtime_s=2000)
    got = lookup.load(window(tmp_path, [trace]), str(tmp_path / "nothing.pb"), digest_pb2.Digest)
    assert got is not None and got.average.total_ns == 444


def test_a_window_whose_files_are_all_gone_keeps_its_source_digest_fresh(tmp_path):
    src = digest(tmp_path / "w.1.digest.pb", mtime_s=2000)
    w = window(tmp_path, [tmp_path / "gone.json"])
    os.remove(w.files[0])  # the manifest too
    assert lookup.fresh_source_digest(w) == str(src)


def test_a_source_digest_whose_head_reads_but_whose_body_does_not_falls_back_to_the_cache(tmp_path):
    """Field 4 (average, a Breakdown) holding one byte that is no Breakdown (a varint cut short): the revision read of
    the head skips it as an unknown field, the whole Digest cannot be parsed."""
    trace = put(tmp_path / "w.1.pt.trace.json", b"abc", 1000)
    head = digest_pb2.Digest(schema_version=SCHEMA_VERSION, analysis_revision=analysis_revision()).SerializeToString()
    put(tmp_path / "w.1.digest.pb", head + b"\x22\x01\xff", 2000)  # tag 4, length-delimited, 1 byte: 0xff
    cache = digest(tmp_path / "cache" / "k.pb", mean=555, mtime_s=500)
    w = window(tmp_path, [trace], sizes=[(trace, 3)])
    assert lookup.usable_source_digest(w) == str(tmp_path / "w.1.digest.pb")  # its head is this code's
    assert lookup.load(w, str(cache), digest_pb2.Digest).average.total_ns == 555
