"""store/source_digest.py under mutation (issue 46): the digest at the source, beside a hand-written
manifest naming a tiny hand-written Kineto trace; published to a stand-in object store (the staged files
removed, the digest naming the bucket's files); and the entry point's answers (exit 0, one line per
failed window, no budget when called as a function)."""
import json
import logging
import os

import pytest

from canning_tb.analysis import digest_pb2
from canning_tb.store import source_digest as sd

TRACE = ('{"traceEvents": [{"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 100, "dur": 5, "pid": 1, '
         '"tid": 1}, {"ph": "X", "name": "ProfilerStep#7", "cat": "user_annotation", "ts": 99, "dur": 10, '
         '"pid": 1, "tid": 1}]}')


def handler_window(folder, worker="rank0"):
    """folder/<worker>.1.canning.json naming folder/<worker>.1.pt.trace.json (our handler's layout)."""
    os.makedirs(folder, exist_ok=True)
    trace = os.path.join(folder, f"{worker}.1.pt.trace.json")
    with open(trace, "w") as f:
        f.write(TRACE)
    manifest = os.path.join(folder, f"{worker}.1.canning.json")
    with open(manifest, "w") as f:
        json.dump({"kind": "kineto", "worker": worker, "window": 1, "rank": 0, "world_size": 1,
                   "manifest": os.path.basename(manifest),
                   "files": [{"name": os.path.basename(trace), "bytes": len(TRACE)}]}, f)
    return manifest, trace


def test_the_digest_is_written_beside_its_manifest(tmp_path):
    manifest, trace = handler_window(str(tmp_path / "run"))
    handler_window(str(tmp_path / "run"), worker="rank1")  # another window of the folder: not this one
    out = sd.write_digest(manifest)
    assert out == str(tmp_path / "run" / "rank0.1.digest.pb")
    digest = digest_pb2.Digest.FromString(open(out, "rb").read())
    assert digest.window.worker == "rank0" and list(digest.window.source_files) == [manifest, trace]
    assert not os.path.exists(tmp_path / "run" / "rank1.1.digest.pb")
    renamed = sd.write_digest(manifest, shown=lambda path: "s3://b/" + os.path.basename(path))
    assert list(digest_pb2.Digest.FromString(open(renamed, "rb").read()).window.source_files) == \
        ["s3://b/rank0.1.canning.json", "s3://b/rank0.1.pt.trace.json"]


def test_a_file_that_is_no_manifest_is_said(tmp_path):
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="x.json: not a canning window manifest"):
        sd.write_digest(str(tmp_path / "x.json"))


class Bucket:
    def __init__(self):
        self.objects, self.fail = {}, None

    def put(self, local, key, recursive=False):
        if self.fail:
            raise self.fail
        with open(local, "rb") as f:
            self.objects[key] = f.read()

    def mv(self, a, b, recursive=False):
        self.objects[b] = self.objects.pop(a)


def test_publish_uploads_the_digest_beside_the_remote_window_and_removes_the_staged_files(tmp_path, monkeypatch):
    from canning_tb.util import remote_fs
    bucket = Bucket()
    monkeypatch.setattr(remote_fs, "open_fs", lambda url: (bucket, url.split("://", 1)[1]))
    stage = str(tmp_path / "stage")
    manifest, trace = handler_window(stage)
    with open(os.path.join(stage, "unrelated.txt"), "w") as f:
        f.write("kept")
    sd.publish_digest(manifest, "s3://bkt/logs/run")
    assert list(bucket.objects) == ["bkt/logs/run/rank0.1.digest.pb"]
    digest = digest_pb2.Digest.FromString(bucket.objects["bkt/logs/run/rank0.1.digest.pb"])
    assert list(digest.window.source_files) == ["s3://bkt/logs/run/rank0.1.canning.json",
                                                "s3://bkt/logs/run/rank0.1.pt.trace.json"]
    assert sorted(os.listdir(stage)) == ["unrelated.txt"]


def test_a_failed_publish_still_removes_the_staged_files(tmp_path, monkeypatch):
    from canning_tb.util import remote_fs

    def no_backend(url):
        raise remote_fs.RemoteError("no s3 back-end")
    monkeypatch.setattr(remote_fs, "open_fs", no_backend)
    stage = str(tmp_path / "stage")
    manifest, _ = handler_window(stage)
    with pytest.raises(remote_fs.RemoteError):
        sd.publish_digest(manifest, "s3://bkt/run")
    assert os.listdir(stage) == ["rank0.1.digest.pb"]  # written before the upload failed; the window's files gone


def test_main_digests_each_manifest_and_says_each_failure(tmp_path, monkeypatch, caplog):
    niced, applied = [], []
    monkeypatch.setattr(sd.os, "nice", lambda n: niced.append(n) or 0)
    monkeypatch.setattr(sd.digest_budget, "apply", applied.append)
    manifest, _ = handler_window(str(tmp_path / "run"))
    (tmp_path / "bad.json").write_text("{}")
    with caplog.at_level(logging.WARNING):
        assert sd.main([str(tmp_path / "bad.json"), manifest]) == 0
    assert os.path.exists(tmp_path / "run" / "rank0.1.digest.pb")
    assert niced == [10] and applied == []  # called as a function: no budget on the caller
    (line,) = [r.getMessage() for r in caplog.records]
    assert line == (f"no digest for {tmp_path / 'bad.json'} (FileNotFoundError: {tmp_path / 'bad.json'}: not a "
                    "canning window manifest); the viewer will compute it on first open")


def test_main_without_manifests_says_its_usage_and_publish_goes_through_publish(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(sd.os, "nice", lambda n: 0)
    with caplog.at_level(logging.WARNING):
        assert sd.main([]) == 0
    assert "usage: python -m canning_tb.store.source_digest [--publish URL]" in caplog.text
    published = []
    monkeypatch.setattr(sd, "publish_digest", lambda path, url: published.append((path, url)))
    assert sd.main(["--publish", "s3://b/r", "a.canning.json"]) == 0
    assert published == [("a.canning.json", "s3://b/r")]


def test_as_the_background_process_it_takes_its_budget_and_tunes_the_heap(tmp_path, monkeypatch):
    applied, tuned = [], []
    monkeypatch.setattr(sd.os, "nice", lambda n: 0)
    monkeypatch.setattr(sd.digest_budget, "apply", applied.append)
    monkeypatch.setattr(sd, "tune_this_process", lambda: tuned.append(1))
    monkeypatch.setattr(sd.sys, "argv", ["source_digest", "m.canning.json"])
    monkeypatch.setattr(sd, "write_digest", lambda path: None)
    assert sd.main() == 0
    assert applied == [["m.canning.json"]] and tuned == [1]


def test_lower_priority_where_allowed(monkeypatch):
    def refused(n):
        raise PermissionError("no")
    monkeypatch.setattr(sd.os, "nice", refused)
    sd._lower_priority()  # no error: the process still runs
    assert sd.NICENESS == 10


def test_help_names_the_module_and_its_option(capsys):
    with pytest.raises(SystemExit) as e:
        sd.main(["--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal's width
    assert out.startswith("usage: python -m canning_tb.store.source_digest [-h] [--publish URL] [manifests ...]")
    assert "--publish URL upload the digest into this remote run folder" in out


def test_the_background_process_says_its_usage_on_stderr_in_its_own_format():
    """The process as the handler starts it, with no manifest: exit 0 and one line in its log format."""
    import subprocess
    import sys
    env = {**os.environ, "CANNING_DIGEST_MAX_RSS": str(1 << 40)}
    done = subprocess.run([sys.executable, "-m", "canning_tb.store.source_digest"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr == ("canning digest: usage: python -m canning_tb.store.source_digest [--publish URL] "
                           "<manifest.canning.json>...\n")


def test_a_failed_upload_names_the_url(tmp_path, monkeypatch):
    from canning_tb.util import remote_fs
    bucket = Bucket()
    bucket.fail = PermissionError("denied")
    monkeypatch.setattr(remote_fs, "open_fs", lambda url: (bucket, url.split("://", 1)[1]))
    manifest, _ = handler_window(str(tmp_path / "stage"))
    with pytest.raises(remote_fs.RemoteError, match="^s3://bkt/run: access denied"):
        sd.publish_digest(manifest, "s3://bkt/run")
