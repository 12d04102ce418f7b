"""store/name_map.py under mutation (issue 46): which file is read, and what each kind of bad file
answers (the defaults and the problem, never an exception): missing, named by the user, too big (the
limit of 4 MiB = 4,194,304 bytes exactly still read), not UTF-8, not JSON, not a map, nested past
Python's limit, a link out of the logdir."""
import json
import os

from canning_tb.analysis.names import name_map
from canning_tb.store import name_map as nm
from canning_tb.store.name_map import MAX_BYTES, load_name_map, name_map_file

DEFAULTS = name_map()


def test_the_file_of_a_folder():
    assert name_map_file("/logs") == os.path.join("/logs", "canning_names.json")
    assert name_map_file(None) is None and name_map_file("") is None


def test_no_file_is_the_defaults_alone(tmp_path):
    assert load_name_map(str(tmp_path)) == (DEFAULTS, None, None)
    assert load_name_map(None) == (DEFAULTS, None, None)


def test_the_logdirs_file_and_a_file_the_user_names(tmp_path):
    (tmp_path / "canning_names.json").write_text(json.dumps({"operators": {"my::mm": "aten::mm"}}))
    names, path, problem = load_name_map(str(tmp_path))
    assert path == str(tmp_path / "canning_names.json") and problem is None
    assert names.operator("my::mm") == "aten::mm" and DEFAULTS.operator("my::mm") == "my::mm"
    own = tmp_path / "elsewhere.json"
    own.write_text(json.dumps({"operators": {"x::y": "aten::add"}}))
    names, path, problem = load_name_map(str(tmp_path), str(own))
    assert path == str(own) and problem is None and names.operator("x::y") == "aten::add"
    assert names.operator("my::mm") == "my::mm"  # the named file, not the logdir's


def test_a_named_file_may_be_a_link_out_the_logdirs_may_not(tmp_path):
    """A link in the logdir to a map outside it: refused; the same link named by the user: read."""
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"operators": {"a::b": "aten::mm"}}))
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    os.symlink(outside, logdir / "canning_names.json")
    names, path, problem = load_name_map(str(logdir))
    assert names == DEFAULTS and path == str(logdir / "canning_names.json")
    assert problem.startswith("cannot read: ")
    names, _, problem = load_name_map(str(logdir), str(logdir / "canning_names.json"))
    assert problem is None and names.operator("a::b") == "aten::mm"
    os.remove(outside)  # a dangling link is still a file that is there (lexists), and cannot be read
    names, path, problem = load_name_map(str(logdir))
    assert names == DEFAULTS and path == str(logdir / "canning_names.json") and problem.startswith("cannot read: ")


def test_the_size_limit_is_4_mib(tmp_path):
    assert MAX_BYTES == 4 * 1024 * 1024
    body = json.dumps({"operators": {}})
    at_limit = body + " " * (MAX_BYTES - len(body))  # whitespace after JSON: still the same map
    (tmp_path / "canning_names.json").write_text(at_limit)
    assert load_name_map(str(tmp_path))[2] is None
    (tmp_path / "canning_names.json").write_text(at_limit + " ")
    assert load_name_map(str(tmp_path)) == (DEFAULTS, str(tmp_path / "canning_names.json"), "larger than 4 MiB")


def test_bad_files_give_the_defaults_and_say_why(tmp_path):
    path = tmp_path / "canning_names.json"
    cases = [(b"\xff\xfe", "utf-8"), (b"{not json", "Expecting property name"), (b"[1]", "must be a JSON object"),
             (b'{"colours": 1}', "unknown keys: colours"), (b"[" * 100000 + b"]" * 100000, "nested too deeply to read")]
    for data, said in cases:
        path.write_bytes(data)
        names, where, problem = load_name_map(str(tmp_path))
        assert names == DEFAULTS and where == str(path) and said in problem, (data[:10], problem)
    assert problem == "nested too deeply to read"


def test_an_unreadable_file_says_the_systems_reason(tmp_path, monkeypatch):
    (tmp_path / "canning_names.json").write_text("{}")

    def refused(path, limit, root=None):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(nm, "read_file", refused)
    assert load_name_map(str(tmp_path))[2] == "cannot read: Permission denied"

    def no_reason(path, limit, root=None):
        raise OSError("odd")
    monkeypatch.setattr(nm, "read_file", no_reason)
    assert load_name_map(str(tmp_path))[2] == "cannot read: odd"
