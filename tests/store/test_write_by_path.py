"""util/safe_files' writers both ways: through folder descriptors (POSIX) and by path (where dir_fd and
O_NOFOLLOW are missing: Windows), forced here by turning the descriptor walk off. Each writes the file
whole under its name and leaves no temp file, refuses a `.canning` that is a link (nothing lands where it
leads), and leaves nothing when the write fails."""
import errno
import os
import stat
import threading

import pytest

from canning_tb.util import safe_files


@pytest.fixture(params=["by descriptor", "by path"])
def way(request, monkeypatch):
    if request.param == "by descriptor" and not safe_files._BY_FD:
        pytest.skip("no dir_fd here: only the writer by path runs")
    monkeypatch.setattr(safe_files, "_BY_FD", request.param == "by descriptor")
    return request.param


def test_a_file_is_written_whole_and_no_temp_stays(tmp_path, way):
    path = tmp_path / "run" / ".canning" / "trends" / "x.bin"
    safe_files.atomic_write(str(path), b"abc")
    safe_files.atomic_write(str(path), write=lambda f: f.write(b"defg"))  # replaces it
    assert path.read_bytes() == b"defg"
    assert sorted(os.listdir(path.parent)) == ["x.bin"]
    safe_files.make_dirs(str(tmp_path / "run" / ".canning" / "other"))
    assert (tmp_path / "run" / ".canning" / "other").is_dir()


def test_our_folder_as_a_link_is_refused(tmp_path, way):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".canning").symlink_to(outside)
    with pytest.raises(OSError):
        safe_files.atomic_write(str(tmp_path / "run" / ".canning" / "x.bin"), b"abc")
    with pytest.raises(OSError):
        safe_files.make_dirs(str(tmp_path / "run" / ".canning" / "sub"))
    assert list(outside.iterdir()) == []


def test_a_failed_write_leaves_nothing(tmp_path, way):
    path = tmp_path / "run" / ".canning" / "x.bin"

    def fail(f):
        f.write(b"half")
        raise RuntimeError("disk gone")
    with pytest.raises(RuntimeError):
        safe_files.atomic_write(str(path), write=fail)
    assert list(path.parent.iterdir()) == []


# -- issue 46: the mutants of the writers that a real bug could make --------------------------------------------
def test_a_folder_of_no_canning_of_ours_is_written_as_it_is(tmp_path, way):
    """A path with no `.canning` / `.canning-capture` in it (a CLI's --out folder) is written and made like any."""
    safe_files.atomic_write(str(tmp_path / "out" / "a.json"), b"{}")
    safe_files.make_dirs(str(tmp_path / "out" / "deeper" / "still"))
    assert (tmp_path / "out" / "a.json").read_bytes() == b"{}"
    assert (tmp_path / "out" / "deeper" / "still").is_dir()


def test_written_files_are_read_write_for_the_owner_and_read_only_for_others(tmp_path, way):
    old = os.umask(0o022)
    try:
        safe_files.atomic_write(str(tmp_path / "run" / ".canning" / "x.bin"), b"abc")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "run" / ".canning" / "x.bin").st_mode) == 0o644  # never executable


def test_the_temp_file_is_made_beside_its_name_not_where_the_process_stands(tmp_path, way, monkeypatch):
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    folder, seen = tmp_path / "run" / ".canning", {}

    def write(f):
        seen.update(beside=sorted(os.listdir(folder)), cwd=os.listdir(elsewhere))
        f.write(b"abc")
    safe_files.atomic_write(str(folder / "x.bin"), write=write)
    assert seen["cwd"] == [] and len(seen["beside"]) == 1 and seen["beside"][0].startswith(".x.bin.")
    assert sorted(os.listdir(folder)) == ["x.bin"]


def test_a_link_planted_at_the_temp_name_is_not_written_through(tmp_path, way):
    """The temp is created exclusively: a link already standing at its name (pid and thread are no secret) makes
    the write fail, and the file it points at keeps its bytes."""
    folder, victim = tmp_path / "run" / ".canning", tmp_path / "victim"
    folder.mkdir(parents=True)
    victim.write_bytes(b"keep")
    (folder / f".x.bin.{os.getpid()}.{threading.get_ident()}.tmp").symlink_to(victim)
    with pytest.raises(FileExistsError):
        safe_files.atomic_write(str(folder / "x.bin"), b"overwritten")
    assert victim.read_bytes() == b"keep" and not (folder / "x.bin").exists()


def test_a_temp_removed_under_the_writer_gives_the_os_error(tmp_path, way):
    """Another process's sweep of stale temps removes ours mid-write: the rename's own error (no such file) is
    what the caller sees, the cleanup's failure to remove it again is not an error of its own."""
    folder = tmp_path / "run" / ".canning"

    def swept(f):
        f.write(b"abc")
        for name in os.listdir(folder):
            os.unlink(folder / name)
    with pytest.raises(FileNotFoundError):
        safe_files.atomic_write(str(folder / "x.bin"), write=swept)
    assert list(folder.iterdir()) == []


def test_a_refused_folder_is_named_with_the_reason_and_the_os_code(tmp_path, way):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".canning").symlink_to(outside)
    with pytest.raises(safe_files.Refused) as e:
        safe_files.make_dirs(str(tmp_path / "run" / ".canning" / "sub"))
    assert (e.value.filename, e.value.strerror) == (str(tmp_path / "run" / ".canning" / "sub"),
                                                    ".canning is a link or not a folder: not written through")
    assert e.value.errno in (errno.ELOOP, errno.ENOTDIR)  # the OS's own (O_DIRECTORY | O_NOFOLLOW: ENOTDIR)
