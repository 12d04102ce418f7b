"""util/safe_files.py at its boundaries: a sibling folder sharing the root's prefix (/data/log2 is not inside
/data/log), links at every level (the root itself a link, a middle folder or the file linking out, links
that lead back in), a read never returning more than its byte limit (and the callers that ask limit + 1
refusing a file one byte too long), and FIFOs, sockets, devices and folders refused without blocking.
Each test names its root (root=) or registers it on a private set, so no confinement leaks into others."""
import errno
import os
import socket
import stat

import pytest

from canning_tb.store import name_map
from canning_tb.util import manifest, safe_files
from canning_tb.util.safe_files import Refused, read_file


@pytest.fixture(autouse=True)
def own_roots(monkeypatch):
    monkeypatch.setattr(safe_files, "_roots", {})  # confine() here touches no other test's roots
    monkeypatch.delenv(safe_files.FOLLOW_ENV, raising=False)


def write(path, data=b"trace"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_sibling_sharing_the_prefix_is_outside(tmp_path):
    log, log2 = tmp_path / "data" / "log", tmp_path / "data" / "log2"
    secret = write(log2 / "secret.json", b"not yours")
    write(log / "run" / "t.json")
    os.symlink(secret, log / "run" / "leak.json")
    assert not safe_files.is_inside(str(secret), str(log))
    assert not safe_files.is_inside(str(log2), str(log))
    assert safe_files.is_inside(str(log), str(log)) and safe_files.is_inside(str(log / "run" / "t.json"), str(log))
    with pytest.raises(Refused, match="outside the logdir"):
        read_file(str(log / "run" / "leak.json"), root=str(log))
    # registered roots are matched by whole folders too: a file under log2 is under no root
    safe_files.confine(str(log))
    assert safe_files._root_of(str(secret)) is None
    assert safe_files._root_of(str(log / "run" / "t.json")) == str(log)
    assert read_file(str(secret)) == b"not yours"  # no root of its own: read
    with pytest.raises(Refused):
        read_file(str(log / "run" / "leak.json"))  # the registered root applies


def test_the_root_itself_a_link(tmp_path):
    real = tmp_path / "real_log"
    write(real / "run" / "t.json", b"inside")
    os.symlink(real, tmp_path / "log")
    # the root is compared by its real path: a file really inside it is read through the linked root
    assert read_file(str(tmp_path / "log" / "run" / "t.json"), root=str(tmp_path / "log")) == b"inside"
    safe_files.confine(str(tmp_path / "log"))
    assert read_file(str(tmp_path / "log" / "run" / "t.json")) == b"inside"


def test_a_middle_folder_linking_out(tmp_path):
    log, outside = tmp_path / "log", tmp_path / "outside"
    write(outside / "t.json", b"outside")
    log.mkdir()
    os.symlink(outside, log / "run")
    with pytest.raises(Refused, match="outside the logdir"):
        read_file(str(log / "run" / "t.json"), root=str(log))


def test_the_file_linking_out_and_following_when_told(tmp_path, monkeypatch):
    log, secret = tmp_path / "log", write(tmp_path / "etc" / "shadow", b"root:x")
    (log / "run").mkdir(parents=True)
    os.symlink(secret, log / "run" / "t.json")
    with pytest.raises(Refused):
        read_file(str(log / "run" / "t.json"), root=str(log))
    monkeypatch.setenv(safe_files.FOLLOW_ENV, "1")
    assert read_file(str(log / "run" / "t.json"), root=str(log)) == b"root:x"


def test_links_that_lead_back_in_are_followed(tmp_path):
    log = tmp_path / "log"
    target = write(log / "b" / "t.json", b"inside")
    (log / "a").mkdir()
    os.symlink("../b/t.json", log / "a" / "t.json")  # inside -> inside
    # inside -> outside -> inside: where it ends is what counts
    (tmp_path / "outside").mkdir()
    os.symlink(target, tmp_path / "outside" / "hop")
    os.symlink(tmp_path / "outside" / "hop", log / "a" / "round.json")
    for name in ("t.json", "round.json"):
        assert read_file(str(log / "a" / name), root=str(log)) == b"inside"


def test_a_read_never_returns_more_than_its_limit(tmp_path):
    small = write(tmp_path / "small", bytes(range(20)))
    assert read_file(str(small), 10) == bytes(range(10))
    assert read_file(str(small), 20) == bytes(range(20)) == read_file(str(small), 21)
    assert read_file(str(small), 0) == b""
    # across the 8 MiB blocks: 2 blocks + 3 bytes of a 3-block file
    size = 3 * (8 << 20)
    big = write(tmp_path / "big", b"x" * size)
    assert len(read_file(str(big), 2 * (8 << 20) + 3)) == 2 * (8 << 20) + 3
    assert len(read_file(str(big))) == size
    with safe_files.open_file(str(big)) as f:
        f.read(5)
        assert len(safe_files.read_all(f, str(big), 7)) == 7  # the rest, limited, from where it stands


def test_the_callers_refuse_one_byte_past_their_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(name_map, "MAX_BYTES", 100)
    exact = write(tmp_path / "a" / "canning_names.json", b"{}" + b" " * 98)  # 100 bytes
    over = write(tmp_path / "b" / "canning_names.json", b"{}" + b" " * 99)  # 101 bytes
    assert name_map.load_name_map(None, str(exact))[2] is None
    assert "larger than" in name_map.load_name_map(None, str(over))[2]
    monkeypatch.setattr(manifest, "MAX_BYTES", 100)
    write(tmp_path / "m_over.json", b"{}" + b" " * 99)
    with pytest.raises(manifest.ManifestError, match="larger than"):
        manifest.load(str(tmp_path / "m_over.json"))
    write(tmp_path / "m_exact.json", b"{}" + b" " * 98)
    assert manifest.load(str(tmp_path / "m_exact.json")) is not None  # exactly the limit: read whole, an empty one


@pytest.mark.timeout(60)  # a FIFO opened without O_NONBLOCK would wait for a writer forever
def test_fifos_sockets_devices_and_folders_are_refused(tmp_path):
    log = tmp_path / "log"
    log.mkdir()
    os.mkfifo(log / "t.pt.trace.json")
    with pytest.raises(Refused, match="a FIFO, not a regular file"):
        read_file(str(log / "t.pt.trace.json"), root=str(log))
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(log / "sock.json"))
        with pytest.raises(OSError):  # a socket cannot even be opened: ENXIO, never read
            read_file(str(log / "sock.json"), root=str(log))
    with pytest.raises(Refused, match="a character device"):
        read_file("/dev/zero")  # would read without end
    with pytest.raises(Refused, match="a folder"):
        read_file(str(log))


def test_a_refusal_names_the_file_the_reason_and_its_code(tmp_path):
    """Bad input gives a clear error naming the file and the problem: Refused is an OSError whose filename is the
    path asked for, whose strerror says why and whose errno is EPERM."""
    import errno
    log, outside = tmp_path / "log", write(tmp_path / "elsewhere" / "t.json")
    log.mkdir()
    os.symlink(outside, log / "link.json")
    with pytest.raises(Refused) as e:
        read_file(str(log / "link.json"), root=str(log))
    assert (e.value.filename, e.value.errno) == (str(log / "link.json"), errno.EPERM)
    assert e.value.strerror == f"a link to outside the logdir (set {safe_files.FOLLOW_ENV}=1 to follow it)"
    os.mkfifo(log / "fifo.json")
    with pytest.raises(Refused) as e:
        read_file(str(log / "fifo.json"), root=str(log))
    assert (e.value.filename, e.value.errno, e.value.strerror) == (str(log / "fifo.json"), errno.EPERM,
                                                                   "a FIFO, not a regular file")
    with pytest.raises(Refused) as e:
        read_file(str(log))
    assert (e.value.filename, e.value.strerror) == (str(log), "a folder, not a regular file")


@pytest.mark.parametrize("value, follows", [("1", True), ("true", True), ("TRUE", True), (" Yes ", True), ("on", True),
                                            ("ON", True), ("0", False), ("no", False), ("", False), ("off", False)])
def test_the_follow_setting_is_read_in_any_case(tmp_path, monkeypatch, value, follows):
    monkeypatch.setenv(safe_files.FOLLOW_ENV, value)
    log, outside = tmp_path / "log", write(tmp_path / "elsewhere" / "t.json", b"out")
    log.mkdir()
    os.symlink(outside, log / "link.json")
    if follows:
        assert read_file(str(log / "link.json"), root=str(log)) == b"out"
    else:
        with pytest.raises(Refused, match="outside the logdir"):
            read_file(str(log / "link.json"), root=str(log))


@pytest.mark.parametrize("mode", ["w", "wb", "a", "x", "r+", "rb+"])
def test_open_file_only_reads(tmp_path, mode):
    target = write(tmp_path / "log" / "t.json", b"keep")
    with pytest.raises(ValueError, match="open_file only reads; write with atomic_write"):
        safe_files.open_file(str(target), mode)
    assert target.read_bytes() == b"keep"  # the user's file is never written to


# -- issue 46: each surviving mutant of safe_files read; these kill the ones a real bug could make ----------------
def test_a_root_whose_name_ends_in_a_space_holds_only_its_own_files(tmp_path):
    """`/data/log ` (a trailing space) and `/data/log` are two folders: the separator is appended to the root as it
    is, only a trailing os.sep is dropped (stripping whitespace would let /data/log/secret pass as inside it)."""
    spaced, plain = tmp_path / "log ", tmp_path / "log"
    inside, beside = write(spaced / "t.json"), write(plain / "secret.json")
    assert safe_files.is_inside(str(inside), str(spaced))
    assert not safe_files.is_inside(str(beside), str(spaced))
    os.symlink(beside, spaced / "leak.json")
    with pytest.raises(Refused, match="outside the logdir"):
        read_file(str(spaced / "leak.json"), root=str(spaced))
    assert safe_files.is_inside(str(beside), os.sep)  # the file system's root holds everything


def test_a_refused_device_or_folder_names_its_kind_exactly(tmp_path):
    with pytest.raises(Refused) as e:
        read_file("/dev/zero")
    assert e.value.strerror == "a character device, not a regular file"
    kinds = {stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFIFO: "a FIFO",
             stat.S_IFCHR: "a character device", stat.S_IFDIR: "a folder", stat.S_IFLNK: "not a plain file"}
    for bits, name in kinds.items():  # sockets cannot be opened (ENXIO), block devices need root: by their mode
        assert safe_files._kind(bits | 0o600) == name


def test_a_checked_descriptor_blocks_again(tmp_path):
    """Opened O_NONBLOCK (so a FIFO's open never waits), a regular file's descriptor is made blocking again
    before it is handed out: whoever reads it gets whole reads, never EAGAIN."""
    fd = safe_files.open_fd(str(write(tmp_path / "t.json")))
    try:
        assert os.get_blocking(fd)
    finally:
        os.close(fd)


def test_open_file_decodes_with_the_encoding_asked(tmp_path):
    path = write(tmp_path / "t.csv", "Name,Größe\n".encode("utf-16"))
    with safe_files.open_file(str(path), "r", encoding="utf-16") as f:
        assert f.read() == "Name,Größe\n"
    with pytest.raises(ValueError) as e:
        safe_files.open_file(str(path), "w")
    assert str(e.value) == "open_file only reads; write with atomic_write"


class FakeClock:
    """time.monotonic for read_all: `ticks` in turn, the last one repeated."""

    def __init__(self, *ticks):
        self.ticks = list(ticks)

    def monotonic(self):
        return self.ticks.pop(0) if len(self.ticks) > 1 else self.ticks[0]


def test_a_read_may_end_at_its_deadline_and_fails_past_it(tmp_path, monkeypatch):
    """The deadline is checked between blocks: a block read exactly at it is kept, one past it fails naming the
    file, the limit and ETIMEDOUT (4-byte blocks, a clock given by hand: no real waiting)."""
    path = write(tmp_path / "slow.json", b"0123456789")  # 3 blocks of 4 bytes
    monkeypatch.setattr(safe_files, "_BLOCK", 4)
    monkeypatch.setattr(safe_files, "READ_DEADLINE_S", 10.0)
    monkeypatch.setattr(safe_files, "time", FakeClock(100.0, 105.0, 110.0))  # the start, then after each block
    assert read_file(str(path)) == b"0123456789"
    monkeypatch.setattr(safe_files, "time", FakeClock(100.0, 105.0, 110.5))
    with pytest.raises(Refused) as e:
        read_file(str(path))
    assert (e.value.filename, e.value.strerror, e.value.errno) == (str(path), "reading took longer than 10 s",
                                                                   errno.ETIMEDOUT)


@pytest.fixture
def no_proc(monkeypatch):
    """Where /proc/self/fd is missing (macOS, BSD): its links read as absent, every other readlink as it is."""
    readlink = os.readlink

    def without_proc(path, *args, **kw):
        if str(path).startswith("/proc/self/fd/"):
            raise FileNotFoundError(errno.ENOENT, "no /proc here", path)
        return readlink(path, *args, **kw)
    monkeypatch.setattr(os, "readlink", without_proc)


def test_without_proc_the_path_is_checked_against_the_descriptor(tmp_path, no_proc):
    """Without /proc the real path of the name is taken, and only when it is the very file opened: links inside are
    followed, a link out is refused, and a name that now leads to another file is refused as changed."""
    log = tmp_path / "log"
    write(log / "b" / "t.json", b"inside")
    (log / "a").mkdir()
    os.symlink("../b/t.json", log / "a" / "t.json")
    assert read_file(str(log / "a" / "t.json"), root=str(log)) == b"inside"
    os.symlink(write(tmp_path / "elsewhere" / "t.json"), log / "a" / "out.json")
    with pytest.raises(Refused, match="outside the logdir"):
        read_file(str(log / "a" / "out.json"), root=str(log))
    fd = os.open(log / "b" / "t.json", os.O_RDONLY)  # opened, then the name asked for leads elsewhere
    try:
        assert safe_files.real_path_of(fd, str(log / "a" / "t.json")) == os.path.realpath(log / "b" / "t.json")
        with pytest.raises(Refused) as e:
            safe_files.real_path_of(fd, str(log / "a" / "out.json"))
        assert (e.value.filename, e.value.strerror, e.value.errno) == (str(log / "a" / "out.json"),
                                                                       "changed while it was opened", errno.EPERM)
    finally:
        os.close(fd)
