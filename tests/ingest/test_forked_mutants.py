"""ingest/forked.py by hand (issue 46, mutation testing): when a fork is allowed, the pipe's stream (a
count, the sizes, the pickle, then each column's bytes: read here a second way, with struct and
pickle), the child's side (_run) run in this process on a pipe, short reads and writes, and the
process' own handling (pipe size, daemon, no fd left open). Only the last tests fork."""
import fcntl
import multiprocessing.context as mp_context
import os
import pickle
import struct
import threading
import types

import numpy as np
import pytest

from canning_tb.ingest import forked


def _fds():
    return set(os.listdir("/proc/self/fd"))


@pytest.fixture
def allowed(monkeypatch):
    """Every condition of can_fork met, whatever this machine is."""
    monkeypatch.setattr(forked.threading, "active_count", lambda: 1)
    monkeypatch.setattr(forked.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(forked.sys, "platform", "linux")
    monkeypatch.setattr(forked.mp, "get_all_start_methods", lambda: ["fork", "spawn"])
    monkeypatch.setattr(forked.mp, "current_process", lambda: types.SimpleNamespace(daemon=False))
    return monkeypatch


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX")
def test_can_fork_needs_each_condition(allowed):
    assert forked.can_fork() is True
    flips = [
        (forked.sys, "platform", "darwin"),
        (forked.mp, "get_all_start_methods", lambda: ["spawn", "forkserver"]),
        (forked.threading, "active_count", lambda: 2),
        (forked.mp, "current_process", lambda: types.SimpleNamespace(daemon=True)),
        (forked.os, "cpu_count", lambda: 1),
        (forked.os, "cpu_count", lambda: None),  # unknown: one CPU
    ]
    for obj, name, value in flips:
        with pytest.MonkeyPatch.context() as m:
            m.setattr(obj, name, value)
            assert forked.can_fork() is False, (name, value)
    allowed.delattr(forked.os, "fork")
    assert forked.can_fork() is False


def _drain(fd, out):
    chunks = []
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            break
        chunks.append(b)
    out.append(b"".join(chunks))


def test_the_stream_read_a_second_way():
    """{'a': int64 [0, 1, 2]}: two views (the pickle, then the array's 24 bytes); the stream is
    count 2, the two sizes, the pickle, the bytes 0, 1, 2 as little-endian int64."""
    r, w = os.pipe()
    got = []
    reader = threading.Thread(target=_drain, args=(r, got))
    reader.start()
    forked._send(w, {"a": np.arange(3, dtype=np.int64)})
    os.close(w)
    reader.join()
    os.close(r)
    data = got[0]
    count, = struct.unpack_from("<q", data, 0)
    assert count == 2
    head_size, column_size = struct.unpack_from("<2q", data, 8)
    assert column_size == 24 and len(data) == 24 + head_size + 24
    head = data[24:24 + head_size]
    assert data[24 + head_size:] == struct.pack("<3q", 0, 1, 2)
    value = pickle.loads(head, buffers=[data[24 + head_size:]])
    assert value["a"].tolist() == [0, 1, 2]


def test_receive_of_a_stream_written_by_hand():
    """A stream made with struct and pickle (protocol 5, out-of-band): int32 [7, -1] and float64 [0.5],
    a text in band; each column comes back in a buffer of its own, writable."""
    value = {"i": np.array([7, -1], np.int32), "f": np.array([0.5]), "t": "text"}
    buffers = []
    head = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    raws = [bytes(b.raw()) for b in buffers]
    stream = struct.pack("<q", 1 + len(raws)) + struct.pack(f"<{1 + len(raws)}q", len(head), *map(len, raws))
    stream += head + b"".join(raws)
    r, w = os.pipe()
    os.write(w, stream)
    os.close(w)
    try:
        got = forked._receive(r)
    finally:
        os.close(r)
    assert got["i"].tolist() == [7, -1] and got["i"].dtype == np.int32
    assert got["f"].tolist() == [0.5] and got["t"] == "text"
    got["i"][0] = 1
    assert got["i"].tolist() == [1, -1]


def test_short_reads_and_writes(monkeypatch):
    """Writes of at most 3 bytes at a time, and reads of what has arrived, still carry every byte in
    order; a stream that ends early is EOFError."""
    real_write = os.write
    calls = []

    def three(fd, data):
        calls.append(len(data))
        return real_write(fd, bytes(data[:3]))
    monkeypatch.setattr(forked.os, "write", three)
    r, w = os.pipe()
    forked._write_all(w, memoryview(b"abcdefgh"))
    assert calls == [8, 5, 2] and os.read(r, 100) == b"abcdefgh"
    monkeypatch.setattr(forked.os, "write", real_write)
    buf = bytearray(6)

    def later():
        real_write(w, b"123")
        real_write(w, b"456")
    t = threading.Thread(target=later)
    t.start()
    assert forked._read_exactly(r, buf) is buf and bytes(buf) == b"123456"
    t.join()
    arr = forked._read_exactly(r, np.zeros(0, np.uint8))
    assert len(arr) == 0
    real_write(w, b"xy")
    os.close(w)
    with pytest.raises(EOFError) as e:
        forked._read_exactly(r, bytearray(3))
    assert str(e.value) == "the child ended before handing its reader over"
    os.close(r)
    r, w = os.pipe()
    real_write(w, b"\x01\x02")
    os.close(w)
    got = forked._read_exactly(r, np.zeros(2, np.uint8))
    assert got.tolist() == [1, 2]
    os.close(r)


def _give(value):
    return value


def _boom():
    raise ValueError("no")


def test_the_childs_side_in_this_process():
    """_run closes the read end it was given, sends the target's value (None where it raised) and
    closes the write end; a parent that stopped listening is no error."""
    for target, args, want in ((_give, ({"x": [1, 2]},), {"x": [1, 2]}), (_boom, (), None)):
        r, w = os.pipe()
        dup = os.dup(r)
        forked._run(w, dup, target, args)
        for fd in (w, dup):
            with pytest.raises(OSError):
                os.fstat(fd)
        assert forked._receive(r) == want
        os.close(r)
    r, w = os.pipe()
    dup = os.dup(r)
    os.close(r)
    forked._run(w, dup, _give, (b"x" * 10,))  # EPIPE: swallowed
    with pytest.raises(OSError):
        os.fstat(w)


@pytest.mark.skipif(not forked.can_fork(), reason="needs fork and a second CPU")
def test_a_real_child_and_its_pipe():
    child = forked.Forked(_give, {"a": np.arange(4)})
    assert child.proc.daemon is True
    assert type(child.proc) is mp_context.ForkProcess  # forked, whatever the default start method
    if hasattr(fcntl, "F_GETPIPE_SZ"):  # Linux: the pipe grown to 1 MiB
        assert fcntl.fcntl(child.fd, fcntl.F_GETPIPE_SZ) == 1 << 20
    got = child.result()
    assert got["a"].tolist() == [0, 1, 2, 3]
    assert not child.proc.is_alive() and child.proc.exitcode == 0
    with pytest.raises(OSError):
        os.fstat(child.fd)  # closed once read


@pytest.mark.skipif(not forked.can_fork(), reason="needs fork and a second CPU")
def test_forked_where_the_default_is_spawn():
    """An application that set spawn (as CUDA users do) still gets a forked child here."""
    import multiprocessing as mp
    before = mp.get_start_method(allow_none=True)
    mp.set_start_method("spawn", force=True)
    try:
        child = forked.Forked(_give, 5)
        assert type(child.proc) is mp_context.ForkProcess
        assert child.result() == 5
    finally:
        mp.set_start_method(before, force=True)


@pytest.mark.skipif(not forked.can_fork() or not os.path.isdir("/proc/self/fd"), reason="needs fork and /proc")
def test_a_start_that_fails_leaves_no_fd(monkeypatch):
    import multiprocessing.process as mpp

    def fail(self):
        raise RuntimeError("cannot start")
    monkeypatch.setattr(mpp.BaseProcess, "start", fail)
    before = _fds()
    with pytest.raises(RuntimeError, match="cannot start"):
        forked.Forked(_give, 1)
    assert _fds() == before


@pytest.mark.skipif(not forked.can_fork(), reason="needs fork and a second CPU")
def test_a_pipe_size_refused_is_no_error(monkeypatch):
    def refuse(*args):
        raise OSError("no")
    monkeypatch.setattr(fcntl, "fcntl", refuse)
    assert forked.Forked(_give, [3]).result() == [3]


@pytest.mark.skipif(not forked.can_fork(), reason="needs fork and a second CPU")
def test_kill_then_none():
    child = forked.Forked(_sleep)
    child.kill()
    assert not child.proc.is_alive() and child.proc.exitcode == -9


def _sleep():
    import time
    time.sleep(3600)
