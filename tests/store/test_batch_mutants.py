"""store/batch.py under mutation (issue 46): one digest job of `canning-prof digest`, on a tiny hand-written
Kineto trace, local or from a stand-in object store (S3's keys: bucket/path), and where its digest goes
beside the data. Expected files, URLs and messages are written out by hand."""
import os
import stat

import pytest

from canning_tb.analysis import digest_pb2
from canning_tb.store import batch as batch_mod
from canning_tb.store.batch import Job, Outcome, _fetched, _write_beside, beside_of, rename_files, run_job
from canning_tb.store.discover import Window

TRACE = ('{"traceEvents": [{"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 100, "dur": 5, "pid": 1, '
         '"tid": 1}, {"ph": "X", "name": "ProfilerStep#7", "cat": "user_annotation", "ts": 99, "dur": 10, '
         '"pid": 1, "tid": 1}]}')
BROKEN = '{"traceEvents": ['
IDENT = ("r", "w", "1")


def window_at(path, fmt="kineto", files=None):
    return Window(id="1", label="window 1", format=fmt, path=str(path), files=tuple(files or (str(path),)),
                  root=os.path.dirname(os.path.dirname(str(path))))


def local_window(tmp_path, text=TRACE):
    path = tmp_path / "logdir" / "r" / "w.pt.trace.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return window_at(path)


def test_a_local_job_digests_its_window_and_keeps_the_digest_when_nothing_is_beside(tmp_path):
    out = run_job(Job(IDENT, local_window(tmp_path), None))
    assert out.ident == IDENT and out.written is None and out.error is None
    digest = digest_pb2.Digest.FromString(out.digest)
    assert digest.window.worker == "w" and digest.window.end_ns - digest.window.start_ns == 10_000


def test_an_unreadable_window_is_an_outcome_naming_its_file(tmp_path):
    win = local_window(tmp_path, BROKEN)
    assert run_job(Job(IDENT, win, str(tmp_path / "x.digest.pb"))) == \
        Outcome(IDENT, None, None, f"{win.path}: not JSON: unexpected end at byte 17")
    assert not os.path.exists(tmp_path / "x.digest.pb")


def test_the_digest_beside_the_data_or_none_where_it_cannot_be_written(tmp_path):
    win = local_window(tmp_path)
    beside = str(tmp_path / "logdir" / "r" / "w.digest.pb")
    out = run_job(Job(IDENT, win, beside))
    assert out.written == beside and open(beside, "rb").read() == out.digest
    (tmp_path / "file").write_text("")
    assert _write_beside(Job(IDENT, win, str(tmp_path / "file" / "x.digest.pb")), b"d") is None
    assert _write_beside(Job(IDENT, win, ""), b"d") is None


class Bucket:
    """A stand-in object store: {key: bytes}; records each request."""
    def __init__(self, objects):
        self.objects, self.calls, self.fail = dict(objects), [], {}

    def exists(self, key):
        self.calls.append(("exists", key))
        self._failing("exists")
        return key in self.objects

    def _failing(self, method):
        if method in self.fail:
            raise self.fail[method]

    def get_file(self, key, local):
        self.calls.append(("get_file", key))
        self._failing("get_file")
        with open(local, "wb") as f:
            f.write(self.objects[key])

    def get(self, key, local, recursive=False):
        self.calls.append(("get", key, recursive))
        self._failing("get")
        for k, data in self.objects.items():
            if k.startswith(key + "/"):
                os.makedirs(os.path.dirname(os.path.join(local, k[len(key) + 1:])), exist_ok=True)
                with open(os.path.join(local, k[len(key) + 1:]), "wb") as f:
                    f.write(data)

    def put(self, local, key, recursive=False):
        with open(local, "rb") as f:
            self.objects[key] = f.read()

    def mv(self, a, b, recursive=False):
        self.objects[b] = self.objects.pop(a)


@pytest.fixture
def bucket(monkeypatch):
    b = Bucket({"bkt/logdir/r/w.pt.trace.json": TRACE.encode()})
    monkeypatch.setattr(batch_mod.remote_fs, "open_fs", lambda url: (b, url.split("://", 1)[1]))
    return b


def test_a_remote_job_fetches_its_files_and_names_them_by_their_url(bucket, tmp_path, monkeypatch):
    """The window as the mirror knows it: paths under /m/logdir, a local copy that this job never reads."""
    win = window_at("/m/logdir/r/w.pt.trace.json", files=["/m/logdir/r/w.pt.trace.json", "/m/logdir/r/gone.json"])
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # nothing is left in the working folder
    out = run_job(Job(IDENT, win, "s3://bkt/logdir/r/w.digest.pb", url="s3://bkt/logdir", local_root="/m/logdir"))
    digest = digest_pb2.Digest.FromString(out.digest)
    assert list(digest.window.source_files) == ["s3://bkt/logdir/r/w.pt.trace.json"]
    assert ("get_file", "bkt/logdir/r/w.pt.trace.json") in bucket.calls
    assert ("exists", "bkt/logdir/r/gone.json") in bucket.calls
    assert not [c for c in bucket.calls if c[0] == "get_file" and c[1].endswith("gone.json")]
    assert out.written == "s3://bkt/logdir/r/w.digest.pb" and bucket.objects["bkt/logdir/r/w.digest.pb"] == out.digest
    assert out.error is None and out.ident == IDENT and digest.window.worker == "w"
    assert os.listdir(tmp_path / "cwd") == []


def test_a_remote_windows_error_names_the_url(bucket):
    bucket.objects["bkt/logdir/r/w.pt.trace.json"] = BROKEN.encode()
    win = window_at("/m/logdir/r/w.pt.trace.json")
    out = run_job(Job(IDENT, win, None, url="s3://bkt/logdir", local_root="/m/logdir"))
    assert out == Outcome(IDENT, None, None, "s3://bkt/logdir/r/w.pt.trace.json: not JSON: unexpected end at byte 17")


def test_a_torch_npu_folder_is_fetched_whole_and_a_db_file_alone(bucket, tmp_path):
    bucket.objects["bkt/logdir/r/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/x.csv"] = b"a"
    folder = window_at("/m/logdir/r/rank0_ascend_pt", fmt="ascend",
                       files=["/m/logdir/r/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/x.csv"])
    job = Job(IDENT, folder, None, url="s3://bkt/logdir", local_root="/m/logdir")
    got = _fetched(job, str(tmp_path))
    assert bucket.calls == [("get", "bkt/logdir/r/rank0_ascend_pt", True)]
    assert got.path == str(tmp_path / "r" / "rank0_ascend_pt")
    assert got.files == (str(tmp_path / "r" / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "x.csv"),)
    assert open(got.files[0], "rb").read() == b"a"
    bucket.calls.clear()
    bucket.objects["bkt/logdir/r/a.db"] = b"sqlite"
    db = window_at("/m/logdir/r/a.db", fmt="ascend")
    got = _fetched(Job(IDENT, db, None, url="s3://bkt/logdir", local_root="/m/logdir"), str(tmp_path))
    assert bucket.calls == [("exists", "bkt/logdir/r/a.db"), ("get_file", "bkt/logdir/r/a.db")]
    assert open(got.path, "rb").read() == b"sqlite"


def test_rename_files_renames_the_sources_and_the_problems_files():
    digest = digest_pb2.Digest()
    digest.window.source_files.extend(["/t/a", "/t/b"])
    digest.problems.add(file="/t/a")
    rename_files(digest, lambda path: "s3://x" + path)
    assert list(digest.window.source_files) == ["s3://x/t/a", "s3://x/t/b"] and digest.problems[0].file == "s3://x/t/a"


def test_only_our_handlers_windows_get_a_digest_beside_them(tmp_path):
    run = tmp_path / "logdir" / "r"
    run.mkdir(parents=True)
    man = window_at(run / "rank0.1.canning.json", fmt="canning")
    assert beside_of(man, None, str(tmp_path / "logdir")) == str(run / "rank0.1.digest.pb")
    assert beside_of(man, "s3://bkt/logdir", str(tmp_path / "logdir")) == "s3://bkt/logdir/r/rank0.1.digest.pb"
    assert beside_of(window_at(run / "w.pt.trace.json"), None, str(tmp_path / "logdir")) is None
    run.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        assert beside_of(man, None, str(tmp_path / "logdir")) is None  # read-only: the caller's cache
    finally:
        run.chmod(stat.S_IRWXU)


@pytest.mark.parametrize("method, fmt, path", [("exists", "kineto", "r/w.pt.trace.json"),
                                               ("get_file", "kineto", "r/w.pt.trace.json"),
                                               ("get", "ascend", "r/rank0_ascend_pt")])
def test_a_failed_request_names_the_logdirs_url(bucket, tmp_path, method, fmt, path):
    from canning_tb.util.remote_fs import RemoteError
    bucket.fail[method] = PermissionError("denied")
    win = window_at("/m/logdir/" + path, fmt=fmt)
    with pytest.raises(RemoteError, match="^s3://bkt/logdir: access denied"):
        _fetched(Job(IDENT, win, None, url="s3://bkt/logdir", local_root="/m/logdir"), str(tmp_path))
