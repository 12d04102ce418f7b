"""capture/files.py on folders laid out here, local and on fsspec's in-memory file system: where the capture folder
is, what a read returns at its byte limit, that a write replaces the whole file, which names are listed, which
files a run's bytes count and where that count stops, and which status files are read (issue 46: fast tests for
a mutation run over files.py; the job's tests reach it through a real profiler)."""
import json
import os

import pytest
from _capture import request

from canning_tb.capture import files
from canning_tb.capture import request as cr
from canning_tb.util import remote_fs


def status(rank: int, **fields) -> dict:
    """A rank's status file (every key the status format names)."""
    return {"format": "canning-capture-status", "rank": rank, "world_size": 2, "host": "h", "pid": 1, "time_ns": 5,
            "step": 100, "steps_per_s": None, "poll_s": 0.5, "cycle_s": 0.25, "heartbeat_s": 1.0,
            "min_interval_s": 0.0, "max_steps": 50, "backend": "gloo", "watching": True, "watch_since_ns": 0,
            "request": None, "state": "idle", "message": "", "start_step": None, "end_step": None, "windows": [],
            **fields}


@pytest.fixture
def memory_run():
    fs, _ = remote_fs.open_fs("memory://capture_files_run")
    for path in ("/capture_files_run",):
        if fs.exists(path):
            fs.rm(path, recursive=True)
    yield fs, "memory://capture_files_run"
    if fs.exists("/capture_files_run"):
        fs.rm("/capture_files_run", recursive=True)


def test_the_status_file_of_a_rank_and_the_names_taken_for_one():
    assert files.status_file(0) == "rank0.status.json" and files.status_file(1234567) == "rank1234567.status.json"
    for name in ("rank0.status.json", "rank9999999.status.json", "rank007.status.json"):
        assert files.STATUS_RE.match(name), name
    for name in ("rank12345678.status.json", "rank.status.json", "xrank1.status.json", "rank1.status.json.tmp",
                 "rank1-status.json", "rank1.statusXjson", "Rank1.status.json", "rank-1.status.json"):
        assert not files.STATUS_RE.match(name), name


def test_a_local_capture_folder_reads_and_writes_its_files(tmp_path):
    folder = files.CaptureFolder(tmp_path)
    assert (folder.remote, folder.path) == (False, os.path.join(str(tmp_path), ".canning-capture"))
    assert folder.read("request.json", 10) is None and folder.names() == [] and folder.request() is None
    os.mkdir(folder.path)
    folder.write("b.json", b"0123456789")
    folder.write("a.json", b"x")
    folder.write("a.json", b"yz")  # replaced whole
    assert open(os.path.join(folder.path, "a.json"), "rb").read() == b"yz"
    assert folder.names() == ["a.json", "b.json"]
    assert folder.read("b.json", 4) == b"01234"  # one byte past the limit: the parser then says too big
    assert folder.read("b.json", 9) == b"0123456789" and folder.read("b.json", 10) == b"0123456789"
    assert folder.read("c.json", 4) is None


def test_a_capture_folder_that_is_a_file_lists_nothing(tmp_path):
    (tmp_path / ".canning-capture").write_text("not a folder")
    assert files.CaptureFolder(str(tmp_path)).names() == []


def test_a_fifo_under_a_capture_name_is_refused_with_its_name(tmp_path):
    os.makedirs(tmp_path / ".canning-capture")
    os.mkfifo(tmp_path / ".canning-capture" / "request.json")
    with pytest.raises(cr.RequestError) as e:
        files.CaptureFolder(str(tmp_path)).request()
    assert str(e.value).startswith("request.json: ") and "not a regular file" in str(e.value)


def test_a_remote_capture_folder_reads_and_writes_its_files(memory_run):
    fs, url = memory_run
    folder = files.CaptureFolder(url)
    assert (folder.remote, folder.path) == (True, "/capture_files_run/.canning-capture")
    assert folder.read("request.json", 10) is None and folder.names() == [] and folder.request() is None
    folder.write("b.json", b"0123456789")
    folder.write("a.json", b"x")
    folder.write("a.json", b"yz")
    assert fs.cat_file("/capture_files_run/.canning-capture/a.json") == b"yz"
    assert folder.names() == ["a.json", "b.json"]  # no temporary file left beside them
    assert folder.read("b.json", 4) == b"01234" and folder.read("b.json", 10) == b"0123456789"


def write_tree(root, sizes: dict) -> None:
    for name, size in sizes.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(b"x" * size)


def test_a_runs_bytes_leave_the_capture_folder_out(tmp_path):
    write_tree(tmp_path, {"a.pt.trace.json": 100, "sub/b.json": 20, "sub/deeper/c": 3,
                          ".canning-capture/request.json": 1000, "sub/.canning-capture/x": 500})
    assert files.CaptureFolder(str(tmp_path)).window_bytes() == 123
    os.symlink(tmp_path / "a.pt.trace.json", tmp_path / "link")  # a link counts its own size, not its target's
    assert files.CaptureFolder(str(tmp_path)).window_bytes() == 123 + len(str(tmp_path / "a.pt.trace.json"))


def test_a_runs_bytes_stop_after_limit_files(tmp_path):
    write_tree(tmp_path, {f"f{i}": 10 ** i for i in range(4)})  # 1, 10, 100, 1000 bytes
    folder = files.CaptureFolder(str(tmp_path))
    walked = [os.path.getsize(tmp_path / n) for n in next(os.walk(tmp_path))[2]]  # the walk's own order
    assert sorted(walked) == [1, 10, 100, 1000]
    assert [folder.window_bytes(n) for n in (1, 2, 3, 4, 5)] == [sum(walked[:n]) for n in (1, 2, 3, 4, 4)]
    assert folder.window_bytes() == 1111


def test_a_remote_runs_bytes_leave_the_capture_folder_out(memory_run):
    fs, url = memory_run
    for name, size in {"a.json": 100, "sub/b": 20, "empty": 0, ".canning-capture/request.json": 1000}.items():
        fs.pipe_file(f"/capture_files_run/{name}", b"x" * size)
    fs.pipe_file("/capture_files_other/c.json", b"x" * 7)  # another run beside it: not this run's
    try:
        assert files.CaptureFolder(url).window_bytes() == 120
    finally:
        fs.rm("/capture_files_other", recursive=True)


def test_a_file_gone_while_counted_is_left_out_and_the_count_goes_on(tmp_path, monkeypatch):
    write_tree(tmp_path, {"a": 1, "b": 10, "c": 100})
    lstat = os.lstat
    first = next(os.walk(tmp_path))[2][0]  # the first the walk lists: the others come after it

    def gone(path, *a, **k):
        if os.path.basename(path) == first:
            raise FileNotFoundError(2, "No such file or directory", path)
        return lstat(path, *a, **k)

    monkeypatch.setattr(os, "lstat", gone)
    assert files.CaptureFolder(str(tmp_path)).window_bytes() == 111 - os.path.getsize(tmp_path / first)


def test_a_remote_failure_names_the_run(memory_run, monkeypatch):
    fs, url = memory_run
    folder = files.CaptureFolder(url)

    def down(*a, **k):
        raise ConnectionError("the store is down")

    for method, act in (("cat_file", lambda: folder.read("request.json", 10)),
                        ("pipe_file", lambda: folder.write("a.json", b"x")),
                        ("mv", lambda: folder.write("a.json", b"x")), ("ls", folder.names),
                        ("find", folder.window_bytes)):
        monkeypatch.setattr(folder.fs, method, down)
        with pytest.raises(remote_fs.RemoteError) as e:
            act()
        assert str(e.value) == f"{url}: ConnectionError: the store is down", method
        monkeypatch.undo()


def test_the_request_and_the_status_files_read_and_the_bad_ones_named(tmp_path):
    folder = files.CaptureFolder(str(tmp_path))
    os.mkdir(folder.path)
    body = request(10, id="0123456789abcdef")
    folder.write("request.json", json.dumps(body).encode())
    assert folder.request() == {**body, "ranks": "all"}
    folder.write("rank0.status.json", json.dumps(status(0)).encode())
    folder.write("rank1.status.json", json.dumps(status(1, step=7)).encode())
    folder.write("rank2.status.json", b"{")
    folder.write("rank3.status.json", json.dumps(status(3, state="dancing")).encode())
    folder.write("rank4.status.json", b" " * (cr.MAX_STATUS_BYTES + 1))
    folder.write("other.json", b"{")  # not a status file: not read
    folder.write("rank5.status.json.tmp", b"{")
    os.mkdir(os.path.join(folder.path, "rank6.status.json"))  # a folder by that name: read fails, named
    got, problems = folder.statuses()
    assert [(s["rank"], s["step"]) for s in got] == [(0, 100), (1, 7)]
    assert [p.split(":")[0] for p in problems] == [".canning-capture/rank2.status.json",
                                                   ".canning-capture/rank3.status.json",
                                                   ".canning-capture/rank4.status.json",
                                                   ".canning-capture/rank6.status.json"]
    assert 'unknown state "dancing"' in problems[1] and "over the limit of 16384" in problems[2]
    folder.write("request.json", b" " * (cr.MAX_REQUEST_BYTES + 1))
    with pytest.raises(cr.RequestError, match="4097 bytes, over the limit of 4096"):
        folder.request()
