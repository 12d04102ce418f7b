"""store/pack.py under mutation (issue 46): a pack written here and read back entry by entry, the archive
opened with zipfile (an independent reading of what was written), and each reason an entry or a whole
pack is not used: no tag, another tag or size than listed, bytes of another length, not a zip, an index
of another format or version."""
import json
import logging
import os
import zipfile

import pytest

from canning_tb.store import pack


def test_names_and_tags():
    assert pack.is_pack("r/canning-digests.zip") and pack.is_pack("canning-digests.zip")
    assert pack.is_pack("a/b/canning-digests.zip")
    assert not pack.is_pack("r/canning-digests.zip.tmp") and not pack.is_pack("r/xcanning-digests.zip")
    assert pack.packable("a/r.1.canning.json") and pack.packable("r.1.digest.pb") and not pack.packable("r.json")
    assert pack.tag({"ETag": "a", "etag": "b", "md5Hash": "c", "md5": "d"}) == "a"
    assert pack.tag({"etag": "b", "md5Hash": "c", "md5": "d"}) == "b"
    assert pack.tag({"md5Hash": "c", "md5": "d"}) == "c" and pack.tag({"md5": "d"}) == "d"
    assert pack.tag({}) == "" and pack.tag({"ETag": None}) == ""
    assert pack.local_tmp("/f") == f"/f/.canning-digests.zip.{os.getpid()}.tmp"
    assert (pack.WORTH, pack.VERSION, pack.FORMAT, pack.INDEX) == (8, 1, "canning-digests", "index.json")


def packed(tmp_path, files):
    """A pack of {name: (bytes, listing info)} at tmp_path/p.zip."""
    arg = {}
    for name, (data, info) in files.items():
        (tmp_path / name).write_bytes(data)
        arg[name] = (str(tmp_path / name), info)
    pack.write(str(tmp_path / "p.zip"), arg)
    return str(tmp_path / "p.zip")


def test_written_as_zipfile_reads_it(tmp_path):
    path = packed(tmp_path, {"b.digest.pb": (b"bb", {"ETag": "e2", "size": 2}),
                             "a.canning.json": (b"a", {"etag": "e1", "size": 1})})
    with zipfile.ZipFile(path) as z:
        assert z.namelist() == ["index.json", "a.canning.json", "b.digest.pb"]
        assert json.loads(z.read("index.json")) == {"format": "canning-digests", "version": 1, "files": {
            "b.digest.pb": {"etag": "e2", "size": 2}, "a.canning.json": {"etag": "e1", "size": 1}}}
        assert z.read("b.digest.pb") == b"bb"
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in z.infolist())


def test_only_entries_held_as_listed_are_read(tmp_path):
    path = packed(tmp_path, {"a": (b"a", {"ETag": "e1", "size": 1}), "b": (b"bb", {"ETag": "e2", "size": 2}),
                             "c": (b"c", {"size": 1}), "d": (b"dd", {"ETag": "e4", "size": 3})})
    wanted = {"a": {"ETag": "e1", "size": 1},  # as listed: read
              "b": {"ETag": "other", "size": 2},  # rewritten since: not from the pack
              "c": {"size": 1},  # no tag to tell: not from the pack
              "d": {"ETag": "e4", "size": 3},  # the index says 3 bytes, the entry holds 2
              "e": {"ETag": "e5", "size": 1}}  # not in the pack
    assert list(pack.read(path, wanted, "s3://b/p.zip")) == [("a", b"a")]
    assert list(pack.read(path, {"b": {"ETag": "e2", "size": 2}}, "w")) == [("b", b"bb")]


def bad_index(tmp_path, index):
    path = tmp_path / "bad.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("index.json", json.dumps(index) if not isinstance(index, bytes) else index)
        z.writestr("a", b"a")
    return str(path)


@pytest.mark.parametrize("index", [{"format": "other", "version": 1, "files": {}},
                                   {"format": "canning-digests", "version": 2, "files": {}},
                                   [1], b"{not json", b"[" * 100000])
def test_a_pack_that_cannot_be_read_gives_nothing_and_is_said(tmp_path, caplog, index):
    with caplog.at_level(logging.WARNING, logger="canning_tb.store"):
        assert list(pack.read(bad_index(tmp_path, index), {"a": {"ETag": "e", "size": 1}}, "s3://b/r/p.zip")) == []
    assert "s3://b/r/p.zip: not a readable pack of digests" in caplog.text


def test_an_index_whose_files_are_not_a_map_holds_nothing(tmp_path, caplog):
    path = bad_index(tmp_path, {"format": "canning-digests", "version": 1, "files": [["a", {"etag": "e", "size": 1}]]})
    with caplog.at_level(logging.WARNING, logger="canning_tb.store"):
        assert list(pack.read(path, {"a": {"ETag": "e", "size": 1}}, "w")) == []
    assert caplog.text == ""
    good = bad_index(tmp_path, {"format": "canning-digests", "version": 1, "files": {"a": {"etag": "e", "size": 1}}})
    assert list(pack.read(good, {"a": {"ETag": "e", "size": 1}}, "w")) == [("a", b"a")]


def test_not_a_zip_or_not_there(tmp_path, caplog):
    (tmp_path / "x.zip").write_bytes(b"PK not really")
    with caplog.at_level(logging.WARNING, logger="canning_tb.store"):
        assert list(pack.read(str(tmp_path / "x.zip"), {}, "one")) == []
        assert list(pack.read(str(tmp_path / "missing.zip"), {}, "two")) == []
    assert "one: not a readable pack" in caplog.text and "two: not a readable pack" in caplog.text


def test_the_warning_says_where_and_why(tmp_path, caplog):
    path = bad_index(tmp_path, {"format": "canning-digests", "version": 2, "files": {}})
    with caplog.at_level(logging.WARNING, logger="canning_tb.store"):
        assert list(pack.read(path, {"a": {"ETag": "e", "size": 1}}, "s3://b/r/p.zip")) == []
    assert [r.getMessage() for r in caplog.records] == [
        "canning: s3://b/r/p.zip: not a readable pack of digests (index.json is not a canning-digests index of "
        "version 1); its files are fetched one by one"]
