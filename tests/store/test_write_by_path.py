"""util/safe_files' writers both ways: through folder descriptors (POSIX) and by path (where dir_fd and
O_NOFOLLOW are missing: Windows), forced here by turning the descriptor walk off. Each writes the file
whole under its name and leaves no temp file, refuses a `.canning` that is a link (nothing lands where it
leads), and leaves nothing when the write fails."""
import os

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
