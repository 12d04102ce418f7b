"""canning-prof mcp's command line (mcp/cli.py) with the server's two entry points stood in for: what each
option reaches, the defaults and bounds docs/agents.md states (--digest-wait-s 0 to 60, default 1; HTTP only on a
loopback address unless --allow-non-loopback), and each refusal's words (issue 46: fast tests for a mutation run
over cli.py; test_mcp_http.py and test_mcp_stdio.py start the real server in a subprocess)."""
import argparse
import os
import re
import sys

import pytest

import canning_tb.mcp
from canning_tb.mcp import cli, server
from canning_tb.store.links import FOLLOW_ENV


@pytest.fixture
def served(monkeypatch):
    """The server's entry points stood in for: each records its arguments."""
    calls = []
    monkeypatch.setattr(server, "serve_stdio", lambda *a, **k: calls.append(("stdio", a, k)))
    monkeypatch.setattr(server, "serve_http", lambda *a, **k: calls.append(("http", a, k)))
    monkeypatch.delenv(FOLLOW_ENV, raising=False)
    return calls


@pytest.mark.parametrize("text, value", [("0", 0.0), ("60", 60.0), ("2.5", 2.5), ("0.0", 0.0)])
def test_a_wait_from_0_to_60_seconds_is_taken(text, value):
    assert cli.wait_seconds(text) == value


@pytest.mark.parametrize("text", ["-0.01", "60.01", "nan", "inf", "soon", ""])
def test_a_wait_outside_0_to_60_is_refused_naming_it(text):
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        cli.wait_seconds(text)
    assert str(refused.value) == f"a number of seconds from 0 to 60, not {text!r}"


@pytest.mark.parametrize("text, address", [("127.0.0.1:8765", ("127.0.0.1", 8765)), ("[::1]:8765", ("::1", 8765)),
                                           ("localhost:1", ("localhost", 1)), ("h:65535", ("h", 65535)),
                                           ("MYBOX:80", ("MYBOX", 80))])
def test_host_and_port_are_read(text, address):
    assert cli.host_port(text) == address


@pytest.mark.parametrize("text", ["8765", "h:0", "h:65536", ":80", "h:", "h:8a", "h:-1", "h: 80"])
def test_a_bad_address_is_refused_naming_it(text):
    with pytest.raises(ValueError) as refused:
        cli.host_port(text)
    assert str(refused.value) == f"--http takes HOST:PORT (e.g. 127.0.0.1:8765), not {text!r}"


@pytest.mark.parametrize("host, loopback", [("localhost", True), ("127.0.0.1", True), ("127.1.2.3", True),
                                            ("::1", True), ("0.0.0.0", False), ("10.0.0.1", False), ("::", False),
                                            ("localhost.example", False), ("example.com", False)])
def test_loopback_addresses(host, loopback):
    assert cli.is_loopback(host) is loopback


def test_stdio_by_default_with_the_default_wait(tmp_path, served):
    assert cli.mcp_command(["--logdir", str(tmp_path)]) == 0
    assert served == [("stdio", (str(tmp_path), None, 1.0), {"follow_links": False})]
    assert FOLLOW_ENV not in os.environ


def test_the_cache_folder_the_wait_and_links_reach_the_server(tmp_path, served):
    assert cli.mcp_command(["--logdir", str(tmp_path), "--cache-dir", "c", "--digest-wait-s", "0",
                            "--follow-links"]) == 0
    # passed as an argument: the process's environment (read by every later Store) is left alone
    assert served == [("stdio", (str(tmp_path), "c", 0.0), {"follow_links": True})] and FOLLOW_ENV not in os.environ


def test_http_on_loopback(tmp_path, served, capsys):
    assert cli.mcp_command(["--logdir", str(tmp_path), "--http", "127.0.0.1:8765", "--digest-wait-s", "3"]) == 0
    assert served == [("http", (str(tmp_path), "127.0.0.1", 8765, None), {"loopback": True, "digest_wait_s": 3.0,
                                                                           "follow_links": False})]
    assert capsys.readouterr().err == "canning-prof mcp: serving http://127.0.0.1:8765/mcp\n"


def test_http_elsewhere_only_when_allowed(tmp_path, served, capsys):
    assert cli.mcp_command(["--logdir", str(tmp_path), "--http", "0.0.0.0:80"]) == 2 and served == []
    assert capsys.readouterr().err == (
        "canning-prof mcp: refusing to serve on 0.0.0.0: not a loopback address, and the server has no "
        "authentication (anyone who reaches it reads every profile). Use 127.0.0.1, or add --allow-non-loopback "
        "behind your own access control.\n")
    assert cli.mcp_command(["--logdir", str(tmp_path), "--http", "0.0.0.0:80", "--allow-non-loopback",
                            "--cache-dir", "c"]) == 0
    assert served == [("http", (str(tmp_path), "0.0.0.0", 80, "c"), {"loopback": False, "digest_wait_s": 1.0,
                                                                       "follow_links": False})]


def test_a_bad_address_or_a_missing_folder_is_said_and_nothing_served(tmp_path, served, capsys):
    assert cli.mcp_command(["--logdir", str(tmp_path), "--http", "8765"]) == 2
    assert capsys.readouterr().err == "canning-prof mcp: --http takes HOST:PORT (e.g. 127.0.0.1:8765), not '8765'\n"
    assert cli.mcp_command(["--logdir", str(tmp_path / "nope")]) == 2
    assert capsys.readouterr().err == f"canning-prof mcp: --logdir {tmp_path / 'nope'}: no such folder\n"
    (tmp_path / "file").write_text("")
    assert cli.mcp_command(["--logdir", str(tmp_path / "file")]) == 2 and served == []


def test_a_url_logdir_is_not_looked_for_on_disk(served):
    assert cli.mcp_command(["--logdir", "s3://bucket/log"]) == 0
    assert served == [("stdio", ("s3://bucket/log", None, 1.0), {"follow_links": False})]


def test_without_the_sdk_the_command_says_what_to_install(tmp_path, served, monkeypatch, capsys):
    monkeypatch.delattr(canning_tb.mcp, "server")
    monkeypatch.setitem(sys.modules, "canning_tb.mcp.server", None)  # an import that fails
    assert cli.mcp_command(["--logdir", str(tmp_path)]) == 2 and served == []
    err = capsys.readouterr().err
    assert err.startswith("canning-prof mcp needs the MCP SDK: pip install 'canning-tb[mcp]' (") and err.endswith(")\n")


def test_the_logdir_is_required_and_bad_options_are_refused(tmp_path, served, capsys):
    for argv in ([], ["--logdir", str(tmp_path), "--digest-wait-s", "61"], ["--logdir", str(tmp_path), "--nope"]):
        with pytest.raises(SystemExit) as exit_:
            cli.mcp_command(argv)
        assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("usage: canning-prof mcp") == 3 and "--logdir" in err and served == []


def test_the_help_describes_every_option_and_names_its_value(served, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.mcp_command(["--help"])
    assert exit_.value.code == 0 and served == []
    text = capsys.readouterr().out
    assert text.startswith("usage: canning-prof mcp") and "(docs/agents.md)" in " ".join(text.split())
    blocks = {}  # each option's entry: its names and value, then its description (wrapped or on the next line)
    for block in re.split(r"\n(?=  -)", text.split("options:\n", 1)[1]):
        signature, *rest = re.split(r"\s{2,}", block.strip(), maxsplit=1)
        blocks[signature] = " ".join(" ".join(rest).split())
    assert set(blocks) == {"-h, --help", "--logdir LOGDIR", "--http HOST:PORT", "--allow-non-loopback",
                           "--cache-dir CACHE_DIR", "--digest-wait-s SECONDS", "--follow-links"}
    assert all(len(words.split()) >= 5 for words in blocks.values()), blocks  # a sentence each
