"""The port `make demo` serves TensorBoard on: the one asked for when it is free, else the next free one.

    python examples/free_port.py [PORT] [HOST]      # prints the port to use (PORT: 6006, HOST: 127.0.0.1)

Asked for a port that is taken (another TensorBoard, a second demo), it says so on stderr and prints the first
free port after it (up to SPAN ports on), else one the system picks. Standard library only: the Makefile runs it
before the demo's venv exists.
"""
from __future__ import annotations

import socket
import sys

SPAN = 100


def is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server can listen on host:port now. SO_REUSEADDR as TensorBoard's own server (werkzeug) sets
    it: a port whose last connections linger in TIME_WAIT is free for it, one with a listener is not."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            s.listen(1)
        except OSError:
            return False
    return True


def choose_port(wanted: int, host: str = "127.0.0.1") -> int:
    """`wanted` when free; else the first free port after it; else one the system gives (port 0)."""
    for port in range(wanted, min(wanted + SPAN, 65536)):
        if is_free(port, host):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def main(argv: list[str]) -> int:
    try:
        wanted = int(argv[0]) if argv and argv[0] else 6006
    except ValueError:
        print(f"free_port: PORT must be a number, not {argv[0]!r}", file=sys.stderr)
        return 2
    if not 0 < wanted < 65536:
        print(f"free_port: PORT must be 1 to 65535, not {wanted}", file=sys.stderr)
        return 2
    host = argv[1] if len(argv) > 1 else "127.0.0.1"
    port = choose_port(wanted, host)
    if port != wanted:
        print(f"port {wanted} on {host} is taken: the demo uses port {port} (PORT=... chooses another)",
              file=sys.stderr)
    print(port)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
