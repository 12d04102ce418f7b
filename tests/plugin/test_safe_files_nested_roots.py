"""Nested confinement roots (util/safe_files.py): a logdir registered inside another (a run folder the user
opened with `--follow-links` under a TensorBoard logdir registered without it, or the other way round). What
discovery lists (store/links.py Policy) and what the open-time check lets through must agree: a folder the user
let links out of lets them out for its own files, however strict an outer logdir is; the outer logdir's other
files keep the outer rule; a stricter inner root never narrows what an outer root that follows links allows
(the readers register each window's folder as a root of its own, without following)."""
import os

import pytest

from canning_tb.store.links import Policy
from canning_tb.util import safe_files
from canning_tb.util.safe_files import Refused, read_file


@pytest.fixture(autouse=True)
def own_roots(monkeypatch):
    monkeypatch.setattr(safe_files, "_roots", {})  # confine() here touches no other test's roots
    monkeypatch.delenv(safe_files.FOLLOW_ENV, raising=False)


def tree(tmp_path):
    """outer/inner/t.json and outer/other/t.json, each a link to a file outside outer."""
    secret = tmp_path / "elsewhere" / "t.json"
    secret.parent.mkdir()
    secret.write_bytes(b"outside")
    outer = tmp_path / "outer"
    for sub in ("inner", "other"):
        (outer / sub).mkdir(parents=True)
        os.symlink(secret, outer / sub / "t.json")
    return outer, outer / "inner", outer / "other"


def test_an_inner_root_that_follows_links_lets_out_only_its_own_files(tmp_path):
    outer, inner, other = tree(tmp_path)
    safe_files.confine(str(outer))  # TensorBoard's logdir, links kept in
    policy = Policy(str(inner), follow_links=True)  # canning-prof --follow-links on a run folder under it
    assert policy.inside(str(inner / "t.json"))  # listed ...
    assert read_file(str(inner / "t.json")) == b"outside"  # ... and opened: the two agree
    assert safe_files.follows_links(str(inner)) and not safe_files.follows_links(str(outer))
    with pytest.raises(Refused, match="outside the logdir"):  # the outer logdir's other folders: its own rule
        read_file(str(other / "t.json"))
    assert not Policy(str(outer)).inside(str(other / "t.json"))


def test_a_strict_inner_root_does_not_narrow_an_outer_one_that_follows(tmp_path):
    outer, inner, other = tree(tmp_path)
    safe_files.confine(str(outer), follow_links=True)
    safe_files.confine(str(inner))  # a window's folder, registered by a reader without following
    assert read_file(str(inner / "t.json")) == b"outside"
    assert read_file(str(other / "t.json")) == b"outside"
    assert safe_files.follows_links(str(inner)) and Policy(str(inner)).inside(str(inner / "t.json"))


def test_without_any_following_both_roots_keep_links_in(tmp_path):
    outer, inner, _ = tree(tmp_path)
    safe_files.confine(str(outer))
    safe_files.confine(str(inner))
    assert not safe_files.follows_links(str(inner))
    assert not Policy(str(inner)).inside(str(inner / "t.json"))
    with pytest.raises(Refused, match="outside the logdir"):
        read_file(str(inner / "t.json"))
    # a root named by the caller that follows links lets its files out, whatever is registered above it
    safe_files.confine(str(inner), follow_links=True)
    assert read_file(str(inner / "t.json"), root=str(inner)) == b"outside"


def test_the_callers_root_decides_when_the_path_is_spelt_through_another_link(tmp_path):
    """The root the caller names is looked up itself, not only the folders the path is spelt through: the same
    logdir reached by two links (log -> outer registered as following, alias -> outer spelt in no registered form)."""
    outer, inner, _ = tree(tmp_path)
    os.symlink(outer, tmp_path / "log")
    os.symlink(outer, tmp_path / "alias")
    safe_files.confine(str(tmp_path / "log"), follow_links=True)
    path = str(tmp_path / "alias" / "inner" / "t.json")
    assert read_file(path, root=str(tmp_path / "log")) == b"outside"
    with pytest.raises(Refused, match="outside the logdir"):
        read_file(path, root=str(tmp_path / "alias"))  # a root nobody let out: links stay in
