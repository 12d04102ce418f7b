"""Which `Host` headers a route that writes (POST /capture_request) answers: against DNS rebinding.

TensorBoard answers any Host, so a page of another site whose name was made to resolve to this machine
(DNS rebinding) would be same-origin with it, past the custom-header check. A browser always sends the
name it resolved, so a write is taken only when Host names the address TensorBoard was told to serve:
- `localhost`, `127.0.0.1`, `[::1]` (TensorBoard's default serves loopback);
- its `--host` flag as given;
- with `--bind_all` (or --host 0.0.0.0 / ::): also this machine's host name and fully qualified name;
- any IP address literal: no name was resolved, so nothing was rebound;
- the names in CANNING_CAPTURE_HOSTS (comma-separated; a reverse proxy's name).
The port is not compared (TensorBoard may pick another when its own is taken).
"""
from __future__ import annotations

import ipaddress
import os
import socket

HOSTS_ENV = "CANNING_CAPTURE_HOSTS"
_LOOPBACK = ("localhost", "127.0.0.1", "::1")
_ALL = ("0.0.0.0", "::", "")


def _name(host: str) -> str:
    """A Host header (or a --host flag) without its port and brackets, lower case, no final dot."""
    host = host.strip().lower()
    if host.startswith("["):
        host = host[1:host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


def allowed_hosts(flags) -> frozenset:
    """The names a write may be addressed to, from TensorBoard's --host / --bind_all (module doc)."""
    names = set(_LOOPBACK)
    host = getattr(flags, "host", None)
    if host:
        names.add(_name(host))
    if getattr(flags, "bind_all", False) or (host is not None and _name(host) in _ALL):
        names.update(_name(n) for n in (socket.gethostname(), socket.getfqdn()) if n)
    names.update(_name(n) for n in os.environ.get(HOSTS_ENV, "").split(",") if n.strip())
    return frozenset(names - set(_ALL))


def host_allowed(header: str | None, allowed: frozenset) -> bool:
    name = _name(header or "")
    if not name:
        return False
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return name in allowed
