"""store/mirror.py under mutation (issue 46): the local copy of a remote logdir, against a stand-in object
store held in memory (S3's listing: name, size, type, ETag, LastModified) that counts each request. What
is copied at sync and what only on demand, the remote times kept, the index that spares a restart's
copies, the short listings between full ones, missing buckets and paths, and the packs of digests.
Every expected file, time and count is written out by hand in the test."""
import hashlib
import io
import json
import os
import zipfile
from datetime import datetime, timezone

import pytest

from canning_tb.store import mirror as mirror_mod
from canning_tb.store import pack
from canning_tb.store.mirror import Mirror, _identity, _mtime, _skipped, default_root
from canning_tb.util.remote_fs import RemoteError, RemoteNotFound

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)  # 1767323045 s


class Bucket:
    """A stand-in object store: {key: bytes}, each object listed with its md5 as ETag and a time (and its type,
    unless `typeless`: some back-ends leave it out of find); `fail`: {method: error} raised by that method."""
    def __init__(self, buckets=("bkt",)):
        self.objects, self.times, self.buckets, self.calls = {}, {}, set(buckets), []
        self.typeless, self.fail = False, {}

    def _failing(self, method, path=None):
        error = self.fail.get(method)
        if isinstance(error, tuple):  # (error, the one path it fails for)
            error = error[0] if path == error[1] else None
        if error is not None:
            raise error

    def put_bytes(self, key, data, when=T0):
        self.objects[key], self.times[key] = data, when

    def info(self, key):
        return {"name": key, "size": len(self.objects[key]), "type": "file",
                "ETag": '"' + hashlib.md5(self.objects[key]).hexdigest() + '"', "LastModified": self.times[key]}

    def invalidate_cache(self, path=None):
        self._failing("invalidate_cache")

    def exists(self, path):
        self.calls.append(("exists", path))
        self._failing("exists", path)
        return path in self.buckets or path in self.objects or any(k.startswith(path + "/") for k in self.objects)

    def find(self, path, detail=False):
        self.calls.append(("find", path))
        self._failing("find")
        keys = [k for k in sorted(self.objects) if k.startswith(path + "/")]
        if not detail:
            return keys
        infos = {k: self.info(k) for k in keys}
        for info in infos.values():
            if self.typeless:
                del info["type"]
        return infos

    def ls(self, path, detail=False):
        self.calls.append(("ls", path))
        self._failing("ls")
        under = [k[len(path) + 1:] for k in self.objects if k.startswith(path + "/")]
        if not under:
            raise FileNotFoundError(path)
        folders = sorted({u.split("/", 1)[0] for u in under if "/" in u})
        if not detail:
            return [f"{path}/{f}" for f in folders] + [f"{path}/{u}" for u in sorted(under) if "/" not in u]
        return [{"name": f"{path}/{f}", "size": 0, "type": "directory"} for f in folders] + \
            [self.info(f"{path}/{u}") for u in sorted(under) if "/" not in u]

    def get(self, rpaths, lpaths):
        self.calls.append(("get", tuple(rpaths)))
        for r, p in zip(rpaths, lpaths):
            with open(p, "wb") as f:
                f.write(self.objects[r])
        self._failing("get")  # after writing: a transfer that breaks off leaves its temporary files

    def get_file(self, rpath, lpath):
        self.calls.append(("get_file", rpath))
        self._failing("get_file")
        if rpath not in self.objects:
            raise FileNotFoundError(rpath)
        with open(lpath, "wb") as f:
            f.write(self.objects[rpath])

    def put(self, local, key, recursive=False):
        self.calls.append(("put", key))
        self._failing("put")
        with open(local, "rb") as f:
            self.put_bytes(key, f.read())

    def mv(self, a, b, recursive=False):
        self.objects[b], self.times[b] = self.objects.pop(a), self.times.pop(a)

    def gets(self):
        return [c for c in self.calls if c[0] in ("get", "get_file")]


@pytest.fixture
def bucket(monkeypatch):
    b = Bucket()
    monkeypatch.setattr(mirror_mod.remote_fs, "open_fs", lambda url: (b, url.split("://", 1)[1].rstrip("/")))
    return b


URL = "s3://bkt/logdir"
ROOT = "bkt/logdir"


def manifest(names, kind="kineto"):
    return json.dumps({"format_version": 1, "kind": kind, "worker": "rank0", "window": 1,
                       "files": [{"name": n, **({"kind": "ascend_pt"} if kind == "ascend_pt" else {})}
                                 for n in names]}).encode()


def local_files(m):
    return sorted(os.path.relpath(os.path.join(d, n), m.local) for d, _, ns in os.walk(m.local) for n in ns)


# -- small helpers --------------------------------------------------------------------------------------
def test_what_is_never_copied():
    assert _skipped(".a/b") and _skipped("a/.b") and _skipped("a/b.tmp") and _skipped("a/events.out.tfevents.1.h")
    assert not _skipped("a/b.json") and not _skipped("a.tmp/b") and not _skipped("a/x.events.out.tfevents.1")


def test_times_of_each_back_end():
    """S3 gives a datetime, hdfs ms, others s, GCS an ISO text (Z: UTC); the first known key wins."""
    assert _mtime({"LastModified": T0}) == 1767323045.0
    assert _mtime({"mtime": 1767323045123}) == 1767323045.123  # past 10^11: ms
    assert _mtime({"mtime": 100000000000}) == 100000000000.0  # exactly 10^11: s
    assert _mtime({"updated": 12.5}) == 12.5
    assert _mtime({"last_modified": "2026-01-02T03:04:05Z"}) == 1767323045.0
    assert _mtime({"modification_time": "no time", "created": 7}) == 7.0
    assert _mtime({"modification_time": 5, "created": 7}) == 5.0
    assert _mtime({"mtime": 100000000001}) == 100000000.001  # just past 10^11: ms
    assert _mtime({"LastModified": T0, "mtime": 3}) == 1767323045.0
    assert _mtime({"size": 1}) is None
    assert _identity({"ETag": "e", "size": 3, "mtime": 4}) == "e|3|4.0"
    assert _identity({}) == "|None|None"


def test_the_default_copy_is_in_the_user_cache_by_the_urls_hash(monkeypatch, tmp_path):
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path))
    h = hashlib.sha1(b"s3://b/x").hexdigest()[:16]
    assert default_root("s3://b/x") == os.path.join(str(tmp_path), "remote", h)


def test_a_mirror_of_a_url_with_a_slash(bucket, tmp_path):
    m = Mirror(URL + "/", str(tmp_path / "m"))
    assert m.url == URL and m.root == ROOT and m.local == str(tmp_path / "m" / "logdir") and m.full_every == 60.0
    assert m.url_of(os.path.join(m.local, "r", "a.json")) == URL + "/r/a.json"
    assert m._rel(ROOT + "/r/a") == "r/a" and m._rel(ROOT + "x/a") == "" and m._rel(ROOT) == ""
    assert m._rel(ROOT + "/r/") == "r"  # a folder listed with its slash
    assert m._rel(ROOT + "/r/AX") == "r/AX" and Mirror(URL + "X", str(tmp_path / "x")).url == URL + "X"


# -- sync and ensure ---------------------------------------------------------------------------------------
def fill(bucket):
    """A run r: a manifest naming its trace (on demand), the digest beside it, a torch trace of no manifest
    (at sync), hidden and TensorBoard files (never), and a torch_npu folder a manifest names (at sync)."""
    bucket.put_bytes(f"{ROOT}/r/rank0.1.canning.json", manifest(["rank0.1.pt.trace.json.gz"]))
    bucket.put_bytes(f"{ROOT}/r/rank0.1.digest.pb", b"digest")
    bucket.put_bytes(f"{ROOT}/r/rank0.1.pt.trace.json.gz", b"big trace")
    bucket.put_bytes(f"{ROOT}/r/other.pt.trace.json", b"{}")
    bucket.put_bytes(f"{ROOT}/r/.x.tmp", b"half")
    bucket.put_bytes(f"{ROOT}/r/events.out.tfevents.1.h", b"tb")
    bucket.put_bytes(f"{ROOT}/n/rank1.1.canning.json", manifest(["rank1_ascend_pt"], kind="ascend_pt"))
    bucket.put_bytes(f"{ROOT}/n/rank1_ascend_pt/trace_view.json", b"[]")


def test_sync_copies_what_discovery_needs_and_the_rest_on_demand(bucket, tmp_path):
    fill(bucket)
    bucket.typeless = True  # listings without a type: files
    m = Mirror(URL, str(tmp_path / "m"))
    m.sync()
    assert local_files(m) == ["n/rank1.1.canning.json", "n/rank1_ascend_pt/trace_view.json",
                              "r/other.pt.trace.json", "r/rank0.1.canning.json", "r/rank0.1.digest.pb"]
    assert os.stat(m.local_path("r/rank0.1.digest.pb")).st_mtime == 1767323045.0  # the remote time
    trace = m.local_path("r/rank0.1.pt.trace.json.gz")
    assert m.ensure([trace, m.local_path("r/other.pt.trace.json")]) is True
    assert open(trace, "rb").read() == b"big trace" and bucket.gets()[-1] == ("get", (f"{ROOT}/r/rank0.1.pt.trace.json.gz",))
    assert m.ensure([trace]) is False
    index = json.loads(open(tmp_path / "m" / "mirror.json").read())
    assert index[("r/rank0.1.pt.trace.json.gz")] == _identity(bucket.info(f"{ROOT}/r/rank0.1.pt.trace.json.gz"))
    assert not [n for d, _, ns in os.walk(tmp_path / "m") for n in ns if n.endswith(".tmp")]


def test_a_restart_copies_nothing_again_and_a_change_is_copied(bucket, tmp_path):
    fill(bucket)
    Mirror(URL, str(tmp_path / "m")).sync()
    bucket.calls.clear()
    m = Mirror(URL, str(tmp_path / "m"))
    m.sync()
    assert bucket.gets() == []
    bucket.put_bytes(f"{ROOT}/r/rank0.1.digest.pb", b"digest 2", when=T0.replace(year=2027))
    del bucket.objects[f"{ROOT}/r/other.pt.trace.json"]
    m.full_every = 0
    m.sync()
    assert bucket.gets() == [("get", (f"{ROOT}/r/rank0.1.digest.pb",))]
    assert open(m.local_path("r/rank0.1.digest.pb"), "rb").read() == b"digest 2"
    assert "r/other.pt.trace.json" not in local_files(m)  # gone remotely: gone here
    os.remove(m.local_path("r/rank0.1.canning.json"))  # a copy lost here: copied again
    m.sync()
    assert bucket.gets()[-1] == ("get", (f"{ROOT}/r/rank0.1.canning.json",))


def test_the_traces_a_manifest_names_at_the_root_or_deep_are_copied_on_demand(bucket, tmp_path):
    bucket.put_bytes(f"{ROOT}/top.canning.json", manifest(["top.pt.trace.json"]))
    bucket.put_bytes(f"{ROOT}/top.pt.trace.json", b"{}")
    bucket.put_bytes(f"{ROOT}/x/y/deep.canning.json", manifest(["deep.pt.trace.json"]))
    bucket.put_bytes(f"{ROOT}/x/y/deep.pt.trace.json", b"{}")
    m = Mirror(URL, str(tmp_path / "m"))
    m.sync()
    assert local_files(m) == ["top.canning.json", "x/y/deep.canning.json"]
    assert m._lazy == {"top.pt.trace.json", "x/y/deep.pt.trace.json"}
    assert m.write_packs() == [URL + "/" + pack.PACK_NAME, URL + "/x/y/" + pack.PACK_NAME]


def test_a_manifest_is_read_once_per_version_and_a_bad_one_names_nothing(bucket, tmp_path, monkeypatch):
    bucket.put_bytes(f"{ROOT}/r/a.canning.json", b"{not json")
    bucket.put_bytes(f"{ROOT}/r/a.pt.trace.json", b"{}")
    reads = []
    real = mirror_mod.load_manifest
    monkeypatch.setattr(mirror_mod, "load_manifest", lambda path: reads.append(path) or real(path))
    m = Mirror(URL, str(tmp_path / "m"), full_every=0)
    m.sync()
    assert "r/a.pt.trace.json" in local_files(m)  # a manifest that names nothing: the trace copied at sync
    m.sync()
    assert len(reads) == 1
    bucket.put_bytes(f"{ROOT}/r/a.canning.json", manifest(["a.pt.trace.json"]), when=T0.replace(year=2027))
    m.sync()
    assert len(reads) == 2 and m._lazy == {"r/a.pt.trace.json"}


def test_the_index_keeps_only_text_and_a_bad_one_is_empty(bucket, tmp_path):
    (tmp_path / "m").mkdir()
    for text, expected in (('{"a": "x", "b": 1, "c": null}', {"a": "x"}), ("[1]", {}), ("{bad", {}), ("", {})):
        (tmp_path / "m" / "mirror.json").write_text(text)
        assert Mirror(URL, str(tmp_path / "m"))._copied == expected


# -- listings ----------------------------------------------------------------------------------------------
def test_between_full_listings_only_the_windows_folders_are_listed(bucket, tmp_path):
    fill(bucket)
    bucket.put_bytes(f"{ROOT}/gone.pt.trace.json", b"{}")
    m = Mirror(URL, str(tmp_path / "m"), full_every=float("inf"))
    m.sync()  # the first sync lists all
    assert [c for c in bucket.calls if c[0] in ("find", "ls")] == [("find", ROOT)]
    bucket.calls.clear()
    bucket.put_bytes(f"{ROOT}/r/new.pt.trace.json", b"{}")
    bucket.put_bytes(f"{ROOT}/z/deep/w.pt.trace.json", b"{}")
    bucket.put_bytes(f"{ROOT}/z/deep/.w.tmp", b"half")
    bucket.put_bytes(f"{ROOT}/top.pt.trace.json", b"{}")
    del bucket.objects[f"{ROOT}/gone.pt.trace.json"]
    del bucket.objects[f"{ROOT}/n/rank1.1.canning.json"]
    bucket.typeless = True  # the new folder's listing says no type: files
    m.sync()
    listed = [c for c in bucket.calls if c[0] in ("find", "ls")]
    # the root, where z is new (listed whole at once), then the known folders in name order
    assert listed == [("ls", ROOT), ("find", f"{ROOT}/z"), ("ls", f"{ROOT}/n"), ("ls", f"{ROOT}/n/rank1_ascend_pt"),
                      ("ls", f"{ROOT}/r")]
    assert local_files(m) == ["n/rank1_ascend_pt/trace_view.json", "r/new.pt.trace.json", "r/other.pt.trace.json",
                              "r/rank0.1.canning.json", "r/rank0.1.digest.pb", "top.pt.trace.json",
                              "z/deep/w.pt.trace.json"]
    assert "gone.pt.trace.json" not in json.loads(open(tmp_path / "m" / "mirror.json").read())
    for key in [k for k in bucket.objects if k.startswith(f"{ROOT}/n/")]:
        del bucket.objects[key]
    m.sync()  # a folder gone: its files too
    assert not [f for f in local_files(m) if f.startswith("n/")]


@pytest.mark.parametrize("method, where", [("invalidate_cache", "short"), ("ls", "short"), ("find", "new folder"),
                                           ("get_file", "pack"), ("invalidate_cache", "full"), ("exists", "full"),
                                           ("find", "full"), ("put", "write pack"), ("get", "full")])
def test_a_failed_request_names_the_logdirs_url(bucket, tmp_path, method, where):
    windows(bucket, 4)
    if where in ("full", "write pack"):
        m = Mirror(URL, str(tmp_path / "m"))
        if where == "write pack":
            m.sync()
        bucket.fail[method] = PermissionError("denied")
        with pytest.raises(RemoteError) as e:
            m.write_packs() if where == "write pack" else m.sync()
        assert str(e.value).startswith("s3://bkt/logdir: access denied")
        assert not [n for d, _, ns in os.walk(tmp_path / "m") for n in ns if n.endswith(".tmp")]
        return
    if where == "pack":
        writer = Mirror(URL, str(tmp_path / "w"))
        writer.sync()
        writer.write_packs()
    m = Mirror(URL, str(tmp_path / "m"), full_every=float("inf") if where != "pack" else 0)
    if where != "pack":
        m.sync()
    bucket.put_bytes(f"{ROOT}/new/w.pt.trace.json", b"{}")
    bucket.fail[method] = PermissionError("denied")
    with pytest.raises(RemoteError) as e:
        m.sync()
    assert str(e.value).startswith("s3://bkt/logdir: access denied")


def test_a_root_gone_between_full_listings_is_said(bucket, tmp_path):
    bucket.put_bytes(f"{ROOT}/r/a.pt.trace.json", b"{}")
    m = Mirror(URL, str(tmp_path / "m"), full_every=float("inf"))
    m.sync()
    bucket.objects.clear()
    with pytest.raises(RemoteNotFound):
        m.sync()


def test_no_bucket_no_path_and_a_bucket_not_written_yet(bucket, tmp_path):
    m = Mirror(URL, str(tmp_path / "m"))
    m.sync()  # the bucket is there, nothing under the path yet: no error, nothing
    assert local_files(m) == []
    Mirror("s3://bkt/a/b/c", str(tmp_path / "deep")).sync()  # the bucket is "bkt", whatever the depth
    bucket.fail["exists"] = (PermissionError("denied"), "bkt")  # the bucket's check itself fails
    with pytest.raises(RemoteError, match="^s3://bkt/logdir: access denied"):
        Mirror(URL, str(tmp_path / "p")).sync()
    del bucket.fail["exists"]
    with pytest.raises(RemoteNotFound, match="s3://nobkt/logdir: no such bucket or path"):
        Mirror("s3://nobkt/logdir", str(tmp_path / "n")).sync()
    with pytest.raises(RemoteNotFound, match="s3://nobkt: no such bucket or path"):
        Mirror("s3://nobkt", str(tmp_path / "o")).sync()


# -- packs -----------------------------------------------------------------------------------------------
def windows(bucket, n, folder="r"):
    for i in range(n):
        bucket.put_bytes(f"{ROOT}/{folder}/rank{i}.1.canning.json", manifest([f"rank{i}.1.pt.trace.json"]))
        bucket.put_bytes(f"{ROOT}/{folder}/rank{i}.1.digest.pb", f"digest {i}".encode())


def test_a_pack_written_and_read_instead_of_one_request_per_file(bucket, tmp_path, monkeypatch):
    windows(bucket, 4)  # 8 small files: WORTH a pack
    writer = Mirror(URL, str(tmp_path / "w"))
    writer.sync()
    assert writer.write_packs() == [URL + "/r/" + pack.PACK_NAME]
    with zipfile.ZipFile(io.BytesIO(bucket.objects[f"{ROOT}/r/{pack.PACK_NAME}"])) as z:
        assert sorted(z.namelist()) == sorted([pack.INDEX] + [f"rank{i}.1.{s}" for i in range(4)
                                                              for s in ("canning.json", "digest.pb")])
    bucket.calls.clear()
    reader = Mirror(URL, str(tmp_path / "r"))
    os.makedirs(reader.local_path("r"))  # the folder is there already: the pack lands in it
    moves, replace = [], os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: moves.append((a, b)) or replace(a, b))
    reader.sync()
    placed = [(a, b) for a, b in moves if b.startswith(reader.local)]
    assert len(placed) == 8 and all(os.path.dirname(a) == os.path.dirname(b) for a, b in placed)  # tmp beside
    assert bucket.gets() == [("get_file", f"{ROOT}/r/{pack.PACK_NAME}")]
    assert open(reader.local_path("r/rank3.1.digest.pb"), "rb").read() == b"digest 3"
    assert os.stat(reader.local_path("r/rank3.1.digest.pb")).st_mtime == 1767323045.0
    assert not [n for n in os.listdir(reader.local_path("r")) if n.startswith(".")]  # no tmp left
    os.remove(reader.local_path("r/rank0.1.digest.pb"))
    reader.sync()  # this version of the pack is used up: the one file alone
    assert bucket.gets()[1:] == [("get", (f"{ROOT}/r/rank0.1.digest.pb",))]


def test_fewer_than_worth_missing_files_come_one_by_one(bucket, tmp_path):
    windows(bucket, 4)
    writer = Mirror(URL, str(tmp_path / "w"))
    writer.sync()
    writer.write_packs()
    del bucket.objects[f"{ROOT}/r/rank0.1.digest.pb"]  # 7 small files listed
    bucket.calls.clear()
    Mirror(URL, str(tmp_path / "r")).sync()
    assert [c[0] for c in bucket.gets()] == ["get"] and len(bucket.gets()[0][1]) == 7


def test_a_file_rewritten_since_the_pack_is_fetched_alone(bucket, tmp_path):
    windows(bucket, 4)
    writer = Mirror(URL, str(tmp_path / "w"))
    writer.sync()
    writer.write_packs()
    bucket.put_bytes(f"{ROOT}/r/rank2.1.digest.pb", b"rewritten")
    bucket.calls.clear()
    reader = Mirror(URL, str(tmp_path / "r"))
    reader.sync()
    assert bucket.gets() == [("get_file", f"{ROOT}/r/{pack.PACK_NAME}"), ("get", (f"{ROOT}/r/rank2.1.digest.pb",))]
    assert open(reader.local_path("r/rank2.1.digest.pb"), "rb").read() == b"rewritten"


def test_a_pack_removed_since_the_listing_costs_one_request(bucket, tmp_path, monkeypatch):
    windows(bucket, 4)
    writer = Mirror(URL, str(tmp_path / "w"))
    writer.sync()
    writer.write_packs()
    reader = Mirror(URL, str(tmp_path / "r"))
    listed = reader._list_all
    monkeypatch.setattr(reader, "_list_all", lambda: (listed(), bucket.objects.pop(f"{ROOT}/r/{pack.PACK_NAME}"))[0])
    bucket.calls.clear()
    reader.sync()
    assert [c[0] for c in bucket.gets()] == ["get_file", "get"] and len(bucket.gets()[1][1]) == 8
    assert not [n for n in os.listdir(reader.local_path("r")) if n.startswith(".")]


def test_packs_only_for_folders_with_manifests_of_tagged_current_copies(bucket, tmp_path):
    windows(bucket, 1, folder="a")
    bucket.put_bytes(f"{ROOT}/b/x.digest.pb", b"a digest with no manifest")
    windows(bucket, 1, folder="c")
    bucket.put_bytes(f"{ROOT}/top.canning.json", manifest([]))
    m = Mirror(URL, str(tmp_path / "m"))
    m.sync()
    os.remove(m.local_path("a/rank0.1.digest.pb"))  # not the listed version here: left out
    assert m.write_packs() == [URL + "/" + pack.PACK_NAME, URL + "/a/" + pack.PACK_NAME,
                               URL + "/c/" + pack.PACK_NAME]  # folders "" < "a" < "b" (none: no manifest) < "c"
    with zipfile.ZipFile(io.BytesIO(bucket.objects[f"{ROOT}/a/{pack.PACK_NAME}"])) as z:
        assert sorted(z.namelist()) == [pack.INDEX, "rank0.1.canning.json"]
    assert f"{ROOT}/b/{pack.PACK_NAME}" not in bucket.objects
    assert not [n for d, _, ns in os.walk(tmp_path / "m") for n in ns if n.endswith(".tmp")]


@pytest.mark.parametrize("folder", ["", "x/y"])
def test_a_pack_at_the_root_or_two_folders_deep_is_found(bucket, tmp_path, folder):
    prefix = f"{folder}/" if folder else ""
    for i in range(4):
        bucket.put_bytes(f"{ROOT}/{prefix}rank{i}.1.canning.json", manifest([f"rank{i}.1.pt.trace.json"]))
        bucket.put_bytes(f"{ROOT}/{prefix}rank{i}.1.digest.pb", f"digest {i}".encode())
    writer = Mirror(URL, str(tmp_path / "w"))
    writer.sync()
    assert writer.write_packs() == [f"{URL}/{prefix}{pack.PACK_NAME}"]
    bucket.calls.clear()
    Mirror(URL, str(tmp_path / "r")).sync()
    assert bucket.gets() == [("get_file", f"{ROOT}/{prefix}{pack.PACK_NAME}")]


def test_a_used_pack_is_not_fetched_again_and_a_small_folder_does_not_stop_the_others(bucket, tmp_path):
    windows(bucket, 4, folder="b")
    bucket.put_bytes(f"{ROOT}/a/rank9.1.canning.json", manifest([]))  # "a": one small file, too few for its pack
    writer = Mirror(URL, str(tmp_path / "w"))
    writer.sync()
    writer.write_packs()
    bucket.calls.clear()
    reader = Mirror(URL, str(tmp_path / "r"))
    reader.sync()
    assert ("get_file", f"{ROOT}/b/{pack.PACK_NAME}") in bucket.gets()
    for name in os.listdir(reader.local_path("b")):
        os.remove(os.path.join(reader.local_path("b"), name))
    bucket.calls.clear()
    reader.sync()  # all 8 lost here: the same pack version is used up, the files come in one request
    assert [c[0] for c in bucket.gets()] == ["get"] and len(bucket.gets()[0][1]) == 8
