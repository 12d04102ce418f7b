"""`make demo`'s port (examples/free_port.py, run by the Makefile before anything else): the port asked for when
it is free; when a server already listens there (on 127.0.0.1 or on every address), another port that is free,
said on stderr. Whether a port is free is checked here by listening on it, independently of the script."""
import socket
import subprocess
import sys

import pytest

from conftest import REPO

SCRIPT = REPO / "examples" / "free_port.py"


def choose(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def listening(host: str, port: int = 0) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((host, port))
    s.listen(1)
    return s


def can_listen(port: int) -> bool:
    try:
        listening("127.0.0.1", port).close()
    except OSError:
        return False
    return True


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])  # another demo; a TensorBoard run with --bind_all
def test_a_taken_port_gives_another_free_one(host):
    with listening(host) as taken:
        port = taken.getsockname()[1]
        out = choose(str(port))
        assert out.returncode == 0, out.stderr
        chosen = int(out.stdout)
        assert chosen != port and 0 < chosen < 65536
        assert can_listen(chosen)  # free indeed, while the taken one still is taken
        assert not can_listen(port)
        assert f"port {port} on 127.0.0.1 is taken: the demo uses port {chosen}" in out.stderr


def test_a_free_port_is_kept():
    with listening("127.0.0.1") as probe:  # a port the system just handed out, then let go
        port = probe.getsockname()[1]
    out = choose(str(port))
    assert out.returncode == 0 and int(out.stdout) == port and out.stderr == ""


def test_the_default_is_tensorboards_6006():
    out = choose()
    assert out.returncode == 0
    if int(out.stdout) != 6006:  # another helper's TensorBoard may hold it: then said so
        assert f"port 6006 on 127.0.0.1 is taken: the demo uses port {int(out.stdout)}" in out.stderr


@pytest.mark.parametrize("bad", ["http", "0", "70000"])
def test_a_bad_port_is_refused(bad):
    out = choose(bad)
    assert out.returncode == 2 and out.stdout == "" and "PORT must be" in out.stderr
