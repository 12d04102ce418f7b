"""The plugin's one HTTP boundary (plugin/boundary.py), its own errors and the Host check of the capture
POST (plugin/hosts.py), route by route in this process (werkzeug's client on one route's WSGI app), with
no logdir: every status, body and header as the module docs and docs/http_api.md ("Conventions") state
them (issue 46: mutation testing of plugin/)."""
import errno
import json
import logging
import os
import socket
from types import SimpleNamespace

import numpy as np
import pytest
from werkzeug.test import Client

from canning_tb.analysis.table_page import PageError
from canning_tb.ingest.table import InputError
from canning_tb.plugin import hosts
from canning_tb.plugin.boundary import Param, Query, app, disposition, encode, error_answer, parse
from canning_tb.plugin.errors import RouteError
from canning_tb.queries.errors import BadParameter, NotFound, QueryError, Unavailable, UnknownChip, Unreadable
from canning_tb.util.remote_fs import RemoteError

LOGDIR = "/data/logs"
STORE = SimpleNamespace(logdir=LOGDIR)


def _answer(handle, params=(), kind="json", query="", store_of=lambda: STORE):
    resp = Client(app(handle, params, kind, store_of, LOGDIR)).get("/r?" + query)
    return resp.status_code, resp.headers, resp.get_data()


# -- parsing --------------------------------------------------------------------------------------------
PARAMS = (Param("run", required=True), Param("n", "int", default=7), Param("on", "flag", default=False),
          Param("ids", "ints"), Param("text", default="x"), Param("must", "int", required=True))


def test_a_query_takes_each_kind_and_the_defaults_of_those_missing_or_empty():
    q = parse({"run": "r", "n": "-3", "on": "1", "ids": "1,-2,3", "must": "0"}, PARAMS)
    assert q == {"run": "r", "n": -3, "on": True, "ids": [1, -2, 3], "text": "x", "must": 0}
    assert (q.run, q.n, q.ids) == ("r", -3, [1, -2, 3])
    q = parse({"run": "r", "n": "", "on": "true", "must": "5", "text": ""}, PARAMS)
    assert q == {"run": "r", "n": 7, "on": False, "ids": None, "text": "x", "must": 5}
    with pytest.raises(AttributeError, match="nothing"):
        q.nothing
    assert isinstance(q, Query)


def test_missing_and_malformed_parameters_are_named():
    with pytest.raises(BadParameter, match=r"^missing parameter: run, must$"):
        parse({"run": ""}, PARAMS)
    with pytest.raises(BadParameter, match=r"^n must be an integer, not 'abc'$"):
        parse({"run": "r", "must": "1", "n": "abc"}, PARAMS)
    with pytest.raises(BadParameter, match=r"^n must be an integer, not '1,2'$"):
        parse({"run": "r", "must": "1", "n": "1,2"}, PARAMS)
    with pytest.raises(BadParameter, match=r"^ids must be integers separated by commas, not '1,,2'$"):
        parse({"run": "r", "must": "1", "ids": "1,,2"}, PARAMS)
    long = "9" * 100 + "x"
    with pytest.raises(BadParameter) as e:
        parse({"run": "r", "must": long}, PARAMS)
    assert str(e.value) == f"must must be an integer, not {long[:80]!r}"


def test_integers_past_two_to_the_62_are_refused_and_the_bound_is_taken():
    bound = str(2**62)
    assert parse({"run": "r", "must": bound, "ids": f"-{bound},{bound}"}, PARAMS).ids == [-(2**62), 2**62]
    with pytest.raises(BadParameter, match=r"^must is out of range: '4611686018427387905'$"):
        parse({"run": "r", "must": str(2**62 + 1)}, PARAMS)
    with pytest.raises(BadParameter, match=r"^ids is out of range: '1,4611686018427387905'$"):
        parse({"run": "r", "must": "1", "ids": f"1,{2**62 + 1}"}, PARAMS)


# -- errors as statuses ---------------------------------------------------------------------------------
def test_each_query_error_has_its_status_and_body():
    cases = [(BadParameter("b"), 400), (NotFound("n"), 404), (Unreadable("u", file="f"), 422),
             (UnknownChip("c", known=["A100"]), 422), (Unavailable("a", loading=True), 503)]
    for error, code in cases:
        assert error_answer(error, STORE, LOGDIR, "/p") == (code, error.body)
    assert error_answer(RouteError(409, "busy", run="r"), STORE, LOGDIR, "/p") == (409, {"error": "busy", "run": "r"})


def test_a_message_names_files_inside_the_logdir_relatively_and_others_by_their_base_name():
    got = error_answer(NotFound("no /data/logs/run1/a.json nor /etc/secret/b.json"), STORE, LOGDIR, "/p")
    assert got == (404, {"error": "no run1/a.json nor b.json"})


def test_input_os_remote_and_page_errors():
    assert error_answer(InputError("/data/logs/r/t.json", "bad /etc/x/y.json"), STORE, LOGDIR, "/p") == (
        422, {"error": "r/t.json: bad y.json", "file": "r/t.json"})
    assert error_answer(InputError("/data/logs/r/t.json", "unlike /data/logs/r/u.json"), STORE, LOGDIR, "/p") == (
        422, {"error": "r/t.json: unlike r/u.json", "file": "r/t.json"})
    assert error_answer(InputError("/data/logs/r/t.json", "bad"), None, LOGDIR, "/p") == (
        422, {"error": "r/t.json: bad", "file": "r/t.json"})
    refused = OSError(errno.ELOOP, "Too many levels of symbolic links", os.fsencode("/data/logs/r/link"))
    assert error_answer(refused, STORE, LOGDIR, "/p") == (
        422, {"error": "r/link: Too many levels of symbolic links", "file": "r/link"})
    no_words = FileNotFoundError()
    no_words.filename = "/data/logs/r/gone"
    assert error_answer(no_words, STORE, LOGDIR, "/p") == (
        422, {"error": "r/gone: FileNotFoundError", "file": "r/gone"})
    assert error_answer(RemoteError("s3://b: access denied"), STORE, LOGDIR, "/p") == (
        502, {"error": "s3://b: access denied"})
    assert error_answer(PageError("sort: no column 'x'"), STORE, LOGDIR, "/p") == (400, {"error": "sort: no column 'x'"})


def test_anything_else_is_a_logged_internal_error(caplog):
    class Odd(QueryError):
        pass
    bug = ValueError("broke at /etc/x/y.py")
    with caplog.at_level(logging.ERROR, logger="canning_tb.plugin"):
        assert error_answer(bug, STORE, LOGDIR, "/overview") == (500, {"error": "internal error: ValueError: broke at y.py"})
    assert caplog.records[-1].getMessage() == "canning: /overview failed" and caplog.records[-1].exc_info[1] is bug
    assert error_answer(KeyError("/data/logs/r/x.json"), STORE, LOGDIR, "/p") == (
        500, {"error": "internal error: KeyError: 'r/x.json'"})
    assert error_answer(Odd("odd"), STORE, LOGDIR, "/p") == (500, {"error": "internal error: Odd: odd"})
    assert error_answer(OSError("no file named"), STORE, LOGDIR, "/p") == (
        500, {"error": "internal error: OSError: no file named"})


# -- answers --------------------------------------------------------------------------------------------
def test_json_answers_numpy_values_and_says_loading_with_202():
    code, headers, body = _answer(lambda q: {"n": np.int64(3), "a": np.arange(3), "f": np.float32(0.5), "q": dict(q)},
                                  (Param("x", "int", default=1),))
    assert code == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"n": 3, "a": [0, 1, 2], "f": 0.5, "q": {"x": 1}}
    assert _answer(lambda q: {"loading": True})[0] == 202
    assert _answer(lambda q: {"loading": False})[0] == 200
    assert _answer(lambda q: [{"loading": True}])[0] == 200
    with pytest.raises(NotImplementedError, match="cannot encode object"):
        encode({"x": object()})


def test_bytes_csv_and_downloads_with_their_headers():
    code, headers, body = _answer(lambda q: b"\x00\x01", kind="bytes")
    assert (code, headers["Content-Type"], body) == (200, "application/octet-stream", b"\x00\x01")
    code, headers, body = _answer(lambda q: ("ops.csv", ["name", "n"], [["a,b", 1]]), kind="csv")
    assert code == 200 and headers["Content-Type"].startswith("text/csv")
    assert headers["Content-Disposition"] == "attachment; filename=\"ops.csv\"; filename*=UTF-8''ops.csv"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert body.decode().splitlines() == ["name,n", '"a,b",1']
    code, headers, body = _answer(lambda q: ("t.json", iter([b"[", b"1", b"]"])), kind="download")
    assert (code, headers["Content-Type"], body) == (200, "application/octet-stream", b"[1]")
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert _answer(lambda q: ("empty.bin", iter([])), kind="download")[2] == b""


def test_a_stream_that_fails_at_its_first_chunk_is_an_error_answer_not_a_broken_stream():
    def chunks():
        raise InputError("/data/logs/r/t.json", "cannot open")
        yield b""
    code, headers, body = _answer(lambda q: ("t.json", chunks()), kind="download")
    assert code == 422 and json.loads(body) == {"error": "r/t.json: cannot open", "file": "r/t.json"}


def test_errors_of_a_route_are_json_with_the_store_or_without_it():
    def fail(q):
        raise InputError("/data/logs/r/t.json", "bad")
    assert json.loads(_answer(fail)[2]) == {"error": "r/t.json: bad", "file": "r/t.json"}

    def no_store():
        raise Unavailable("still listing")
    code, headers, body = _answer(fail, store_of=no_store)
    assert code == 422 and headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"error": "r/t.json: bad", "file": "r/t.json"}
    code, _, body = _answer(lambda q: q, (Param("a", required=True),))
    assert (code, json.loads(body)) == (400, {"error": "missing parameter: a"})


def test_a_download_name_is_quoted_for_old_and_new_browsers():
    assert disposition('训练 "a"\\b%/c.json') == (
        "attachment; filename=\"__ _a__b__c.json\"; filename*=UTF-8''%E8%AE%AD%E7%BB%83%20%22a%22%5Cb%25%2Fc.json")
    assert disposition("") == "attachment; filename=\"download\"; filename*=UTF-8''"
    assert disposition("a\x7fb\x1f c~") == "attachment; filename=\"a_b_ c~\"; filename*=UTF-8''a%7Fb%1F%20c~"
    assert disposition("rank0_X.csv") == "attachment; filename=\"rank0_X.csv\"; filename*=UTF-8''rank0_X.csv"


def test_a_route_error_keeps_its_code_and_extra_fields():
    error = RouteError(429, "wait", run="r")
    assert (error.code, error.body, str(error)) == (429, {"error": "wait", "run": "r"}, "wait")
    assert isinstance(error, QueryError)


# -- the Host of a capture POST -------------------------------------------------------------------------
def test_host_names_lose_their_port_brackets_case_and_final_dot():
    assert [hosts._name(h) for h in ("[::1]:6006", "[::1", "Example.COM.:80", " myhost ", "::1", "fe80::1:2",
                                     "a:b:c", "", "[a]b]")] == ["::1", "::1", "example.com", "myhost", "::1",
                                                                  "fe80::1:2", "a:b:c", "", "a"]


def test_the_names_a_write_may_be_addressed_to(monkeypatch):
    monkeypatch.delenv(hosts.HOSTS_ENV, raising=False)
    monkeypatch.setattr(socket, "gethostname", lambda: "Box")
    monkeypatch.setattr(socket, "getfqdn", lambda: "box.lab.example.")
    loopback = {"localhost", "127.0.0.1", "::1"}
    assert hosts.allowed_hosts(None) == loopback
    assert hosts.allowed_hosts(SimpleNamespace(host="My.Host:6006")) == loopback | {"my.host"}
    assert hosts.allowed_hosts(SimpleNamespace(bind_all=True)) == loopback | {"box", "box.lab.example"}
    for every in ("0.0.0.0", "::", "[::]"):
        assert hosts.allowed_hosts(SimpleNamespace(host=every)) == loopback | {"box", "box.lab.example"}
    assert hosts.allowed_hosts(SimpleNamespace(host="")) == loopback | {"box", "box.lab.example"}  # "" binds all
    monkeypatch.setattr(socket, "getfqdn", lambda: "")
    assert hosts.allowed_hosts(SimpleNamespace(bind_all=True)) == loopback | {"box"}
    monkeypatch.setenv(hosts.HOSTS_ENV, " Proxy.example , ,other.")
    assert hosts.allowed_hosts(None) == loopback | {"proxy.example", "other"}


def test_a_host_header_is_allowed_by_name_or_as_any_address_literal():
    allowed = frozenset({"localhost", "box"})
    assert [hosts.host_allowed(h, allowed) for h in ("localhost:6006", "BOX", "10.1.2.3:80", "[fe80::1]:6006",
                                                     "evil.example", "", None, "box.evil")] == [
        True, True, True, True, False, False, False, False]
