"""canning-prof mcp --logdir DIR [--http HOST:PORT] [--cache-dir DIR] [--digest-wait-s S]: the MCP server on stdio (a client
starts it), or on a local streamable-HTTP endpoint. HTTP only on a loopback address unless
--allow-non-loopback: the server has no authentication, and whoever reaches it reads every profile."""
from __future__ import annotations

import argparse
import ipaddress
import os
import sys

from canning_tb.util.remote_fs import is_url

INSTALL = "canning-prof mcp needs the MCP SDK: pip install 'canning-tb[mcp]'"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="canning-prof mcp", description="A Model Context Protocol server over the "
                                "profiles under a logdir (docs/agents.md): stdio by default.")
    p.add_argument("--logdir", required=True, help="the logdir (a local path or s3://, gs://, ... URL)")
    p.add_argument("--http", metavar="HOST:PORT", default=None,
                   help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (e.g. 127.0.0.1:8765)")
    p.add_argument("--allow-non-loopback", action="store_true",
                   help="let --http bind an address other than loopback: the server has no authentication")
    p.add_argument("--cache-dir", default=None,
                   help="where digests are cached (default: $CANNING_CACHE_DIR or ~/.cache/canning-tb; never the logdir)")
    p.add_argument("--digest-wait-s", type=wait_seconds, default=None, metavar="SECONDS",
                   help="how long a call waits for a window's digest before it answers \"digesting\" with when to "
                        "ask again (default 1; 0: answer at once)")
    p.add_argument("--follow-links", action="store_true", help="also read files that links lead to outside --logdir")
    return p


def wait_seconds(text: str) -> float:
    """--digest-wait-s: a number of seconds from 0 to 60 (a call must not hold the client longer)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 60:  # NaN fails both
        raise argparse.ArgumentTypeError(f"a number of seconds from 0 to 60, not {text!r}")
    return value


def host_port(text: str) -> tuple[str, int]:
    """"127.0.0.1:8765", "[::1]:8765", "localhost:8765" -> (host, port); ValueError with the reason."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--http takes HOST:PORT (e.g. 127.0.0.1:8765), not {text!r}")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def mcp_command(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if not is_url(args.logdir) and not os.path.isdir(args.logdir):
        print(f"canning-prof mcp: --logdir {args.logdir}: no such folder", file=sys.stderr)
        return 2
    address = None
    if args.http:
        try:
            address = host_port(args.http)
        except ValueError as e:
            print(f"canning-prof mcp: {e}", file=sys.stderr)
            return 2
        if not is_loopback(address[0]) and not args.allow_non_loopback:
            print(f"canning-prof mcp: refusing to serve on {address[0]}: not a loopback address, and the server has "
                  "no authentication (anyone who reaches it reads every profile). Use 127.0.0.1, or add "
                  "--allow-non-loopback behind your own access control.", file=sys.stderr)
            return 2
    try:
        from . import server
    except ImportError as e:
        print(f"{INSTALL} ({e})", file=sys.stderr)
        return 2
    wait = server.DIGEST_WAIT_S if args.digest_wait_s is None else args.digest_wait_s
    if address is None:
        server.serve_stdio(args.logdir, args.cache_dir, wait, follow_links=args.follow_links)
    else:
        print(f"canning-prof mcp: serving http://{args.http}/mcp", file=sys.stderr)
        server.serve_http(args.logdir, *address, args.cache_dir, loopback=is_loopback(address[0]), digest_wait_s=wait,
                          follow_links=args.follow_links)
    return 0
