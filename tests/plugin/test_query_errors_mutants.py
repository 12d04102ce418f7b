"""queries/errors.py by hand (issue 46: fast tests for a mutation run): an error's body, a file named relative to
the logdir, absolute paths scrubbed from a message (relative inside the logdir, else the base name), and the window's
digest: unknown ids, a window deleted since the listing, an unreadable file, only some fields. Each expected text is
written out by hand."""
import os
from types import SimpleNamespace

import pytest

from canning_tb.ingest.table import InputError
from canning_tb.queries.errors import (BadParameter, NotFound, QueryError, Unreadable, scrub_paths, short_path,
                                       unknown_window, window_digest)


def test_an_errors_body():
    e = BadParameter("bad x", file="a.json", loading=True)
    assert e.body == {"error": "bad x", "file": "a.json", "loading": True} and str(e) == "bad x"
    assert isinstance(e, QueryError) and QueryError("m").body == {"error": "m"}
    assert unknown_window("r", "w", "1").body == {"error": "unknown run/worker/window: 'r' / 'w' / '1'"}


def test_short_path():
    store = SimpleNamespace(logdir="/data/log")
    assert short_path(store, "/data/log/run1/w.json") == "run1/w.json"
    assert short_path(store, "/data/log") == "."
    assert short_path(store, "/data/logs/a.json") == "/data/logs/a.json"  # beside the logdir: as it is
    assert short_path(store, "/data/a.json") == "/data/a.json"
    assert short_path(store, "run1/w.json") == "run1/w.json" and short_path(store, "") == ""
    assert short_path(SimpleNamespace(logdir=""), "/data/log/a") == "/data/log/a"
    assert short_path(SimpleNamespace(logdir=None), "/data/log/a") == "/data/log/a"


def test_scrub_paths_inside_and_outside_the_logdir():
    said = "cannot read /data/log/run1/a.json: bad; see /data/log and (/etc/x/y.csv), /tmp/dir/ and /"
    assert scrub_paths(said, "/data/log") == "cannot read run1/a.json: bad; see . and (y.csv), dir and /"
    assert scrub_paths(said, "/data/log/") == "cannot read run1/a.json: bad; see . and (y.csv), dir and /"
    assert scrub_paths("in /data/logx/a.json", "/data/log") == "in a.json"
    assert scrub_paths("in '/data/log/a b'", "/data/log") == "in 'a b'"


def test_scrub_paths_without_a_logdir_or_with_a_remote_one():
    for logdir in (None, "", "s3://bucket/data/log", "gs://b/data/log", "hdfs://n/data/log"):
        assert scrub_paths("read /data/log/run1/a.json", logdir) == "read a.json"


def test_scrub_paths_leaves_what_is_no_absolute_path():
    for text in ("see http://host/a/b", "x/y/z", "./a/b", "a:/b/c", "no path at all", "10/2"):
        assert scrub_paths(text, "/data") == text


def test_scrub_paths_through_a_linked_logdir(tmp_path):
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    said = f"read {tmp_path}/real/r/a.json and {tmp_path}/link/r/b.json"
    assert scrub_paths(said, str(tmp_path / "link")) == "read r/a.json and r/b.json"


class Store:
    def __init__(self, path, digest=None, remote=None):
        self.logdir, self.path, self.given, self.remote, self.asked = "/data/log", path, digest, remote, []

    def window(self, run, worker, window):
        if window != "1":
            raise KeyError(window)
        return SimpleNamespace(path=self.path)

    def digest(self, run, worker, window):
        self.asked.append(("digest", window))
        if isinstance(self.given, Exception):
            raise self.given
        return self.given

    def digest_part(self, run, worker, window, fields):
        self.asked.append(("part", window, fields))
        return self.given


def test_window_digest(tmp_path):
    store = Store(str(tmp_path), digest="D")
    assert window_digest(store, "r", "w", "1") == "D" and store.asked == [("digest", "1")]
    assert window_digest(store, "r", "w", "1", ("steps",)) == "D" and store.asked[-1] == ("part", "1", ("steps",))
    assert window_digest(store, "r", "w", "1", ()) == "D" and store.asked[-1] == ("digest", "1")
    with pytest.raises(NotFound, match=r"^unknown run/worker/window: 'r' / 'w' / '2'$"):
        window_digest(store, "r", "w", "2")


def test_a_window_deleted_since_the_listing(tmp_path):
    gone = Store(str(tmp_path / "gone"), digest="D")
    with pytest.raises(NotFound, match=r"^r / w / 1 is gone: its files were deleted or moved since the logdir was "
                                       r"listed$"):
        window_digest(gone, "r", "w", "1")
    assert gone.asked == []
    assert window_digest(Store(str(tmp_path / "gone"), digest="D", remote="s3"), "r", "w", "1") == "D"
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")  # a link is there, even to nothing
    assert window_digest(Store(str(tmp_path / "dangling"), digest="D"), "r", "w", "1") == "D"


def test_an_unreadable_window_and_one_forgotten_while_read(tmp_path):
    store = Store(str(tmp_path), digest=InputError("/data/log/r/w.json", "not JSON"))
    with pytest.raises(Unreadable, match=r"^r/w.json: not JSON$") as e:
        window_digest(store, "r", "w", "1")
    assert e.value.body == {"error": "r/w.json: not JSON", "file": "r/w.json"}
    with pytest.raises(NotFound, match=r"^unknown run/worker/window: 'r' / 'w' / '1'$"):
        window_digest(Store(str(tmp_path), digest=KeyError("1")), "r", "w", "1")


def test_scrub_paths_under_the_root_folder_and_names_ending_in_x():
    # the logdir "/": every absolute path is inside it, named from there
    assert scrub_paths("read /data/a.json", "/") == "read data/a.json"
    # a logdir ending in X holds /data/logX/..., not /data/log/...
    assert scrub_paths("read /data/log/r/a.json", "/data/logX") == "read a.json"
    assert scrub_paths("read /opt/boX and /opt/boX/", None) == "read boX and boX"


def test_short_path_needs_a_logdir_and_an_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative path or no logdir must not be read against the working folder
    here = str(tmp_path / "a.json")
    assert short_path(SimpleNamespace(logdir=None), here) == here
    assert short_path(SimpleNamespace(logdir=str(tmp_path)), "x/../a.json") == "x/../a.json"
