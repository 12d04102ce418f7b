"""`canning-prof mcp --http 127.0.0.1:PORT`: the real SDK client over streamable HTTP against a real server
process; its overview's figures are `canning-prof --mode=view --format=json`'s, field for field (the
machine-first CLI and the tools share names); a request naming another host is refused (DNS rebinding),
and a non-loopback address is refused unless forced."""
import http.client
import json
import shutil
import socket
import subprocess
import time

import pytest

from _mcp import Session, canning_prof, server_env
from _procs import stop_process
from _s3 import _free_port
from conftest import fixture_path

from canning_tb.cli.main import main as cli_main

TRACE = "worker0_step_12.1694128201545.pt.trace.json.gz"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root, cache = tmp_path_factory.mktemp("mcp_http_logdir"), tmp_path_factory.mktemp("mcp_http_cache")
    (root / "dlrm").mkdir()
    shutil.copy(fixture_path("param", "dlrm_8ranks", TRACE), root / "dlrm" / TRACE)
    port = _free_port()
    log = open(tmp_path_factory.mktemp("mcp_http_log") / "server.log", "w+")
    proc = subprocess.Popen([*canning_prof(), "mcp", "--logdir", str(root), "--http", f"127.0.0.1:{port}",
                             "--cache-dir", str(cache)], env=server_env(cache), stdout=log, stderr=subprocess.STDOUT)
    try:  # the server is stopped on every path, a slow start included
        deadline = time.monotonic() + 180
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log.seek(0) or log.read()
                time.sleep(0.1)
        yield {"root": root, "cache": cache, "port": port, "proc": proc}
    finally:
        stop_process(proc, grace_s=20)
        log.close()


def test_http_transport_answers_with_the_cli_json_fields(served, capsys):
    session = Session(f"http://127.0.0.1:{served['port']}/mcp")
    try:
        (window,) = session.answer("list_windows", {"run": "dlrm"})["windows"]
        where = {"run": "dlrm", "worker": window["worker"], "window": window["window"]}
        overview = session.answer("overview", where)
        while overview.get("status") == "digesting":
            time.sleep(0.3)
            overview = session.answer("overview", where)
    finally:
        session.close()
    assert cli_main(["--mode=view", f"--input={served['root'] / 'dlrm'}", "--format=json",
                     f"--cache-dir={served['cache']}"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["windows"]
    assert (entry["run"], entry["worker"], entry["window"]) == (".", where["worker"], where["window"])
    assert overview["figures"] == entry["figures"]


def test_another_host_name_is_refused(served):
    conn = http.client.HTTPConnection("127.0.0.1", served["port"], timeout=10)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    conn.request("POST", "/mcp", body, {"Host": "attacker.example:80", "Content-Type": "application/json",
                                        "Accept": "application/json, text/event-stream"})
    assert conn.getresponse().status == 421  # the Host header is checked: a rebound DNS name gets nothing
    assert served["proc"].poll() is None


@pytest.mark.parametrize("address,says", [("0.0.0.0:8765", "not a loopback address"),
                                          ("192.168.1.5:8765", "not a loopback address"),
                                          ("8765", "HOST:PORT"), ("127.0.0.1:99999", "HOST:PORT")])
def test_non_loopback_or_bad_addresses_are_refused(tmp_path, capsys, address, says):
    assert cli_main(["mcp", "--logdir", str(tmp_path), "--http", address]) == 2
    assert says in capsys.readouterr().err


def test_a_missing_logdir_is_refused(tmp_path, capsys):
    assert cli_main(["mcp", "--logdir", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err
