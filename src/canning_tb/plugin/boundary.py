"""The plugin's one HTTP boundary: every route declares its query (`Param`s, parsed once into a `Query`),
says what it answers (JSON, CSV, bytes, a download) and is wrapped by `app()`, which maps every error
the same way for every kind of route (TensorBoard's `_handling_errors` pattern, with our JSON bodies):

| error                                   | code | body                                          |
|-----------------------------------------|------|-----------------------------------------------|
| RouteError (the plugin's own)           | its  | its body                                      |
| BadParameter, PageError                 | 400  | {"error": "<parameter>: <problem>"}           |
| NotFound (an id not discovered)         | 404  | its body                                      |
| Unreadable (queries' InputError)        | 422  | {"error": "<file>: <problem>", "file"}        |
| Unavailable (still listing the logdir)  | 503  | its body                                      |
| InputError / a refused or unreadable file (OSError) | 422 | {"error": "<file>: <problem>", "file"} |
| RemoteError (a remote logdir)           | 502  | {"error": "<url>: <problem>"} (no secrets)   |
| anything else (a bug; logged)           | 500  | {"error": "internal error: <type>: <message>"} |

Files in messages are named relative to the logdir; an absolute path outside it never leaves (its
base name does). Streamed answers (CSV, downloads) start their stream inside the boundary, so a file
that cannot be opened is a 422, not a broken stream. JSON is encoded with msgspec (docs/http_api.md).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import quote

import msgspec
from tensorboard.backend import http_util
from werkzeug import wrappers

from canning_tb.queries.bounds import check_int
from canning_tb.queries.errors import (BadParameter, NotFound, QueryError, Unavailable, UnknownChip, Unreadable,
                                       scrub_paths, short_path)
from canning_tb.util.remote_fs import RemoteError

from .errors import RouteError

log = logging.getLogger("canning_tb.plugin")


@dataclass(frozen=True)
class Param:
    name: str
    kind: str = "text"  # "text" | "int" | "flag" (=1) | "ints" (comma-separated)
    required: bool = False
    default: Any = None


class Query(dict):
    """The parsed parameters of one request (missing optional ones: their default); q.name or q["name"]."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _value(param: Param, text: str):
    if param.kind == "text":
        return text
    if param.kind == "flag":
        return text == "1"
    try:
        values = [int(part) for part in text.split(",")] if param.kind == "ints" else [int(text)]
    except ValueError:
        what = "integers separated by commas" if param.kind == "ints" else "an integer"
        raise BadParameter(f"{param.name} must be {what}, not {text[:80]!r}") from None
    for v in values:  # the bound every front door shares (queries/bounds.py)
        check_int(param.name, v, text)
    return values if param.kind == "ints" else values[0]


def parse(args, params: tuple[Param, ...]) -> Query:
    """The declared parameters of a request; 400 for missing required ones and malformed values."""
    missing = [p.name for p in params if p.required and not args.get(p.name)]
    if missing:
        raise BadParameter(f"missing parameter: {', '.join(missing)}")
    query = Query()
    for p in params:
        text = args.get(p.name)
        query[p.name] = p.default if text in (None, "") else _value(p, text)
    return query


# -- errors --------------------------------------------------------------------------------------
def _input_error(store, file: str, problem: str, logdir: str | None) -> tuple[int, dict]:
    shown = scrub_paths(short_path(store, file), logdir) if store is not None else scrub_paths(file, logdir)
    return 422, {"error": f"{shown}: {scrub_paths(problem, logdir)}", "file": shown}


# the selections' errors (queries/errors.py) as HTTP statuses; a QueryError of another kind is a bug (500)
_STATUS = {BadParameter: 400, NotFound: 404, Unreadable: 422, UnknownChip: 422, Unavailable: 503}


def error_answer(error: BaseException, store, logdir: str | None, path: str) -> tuple[int, dict]:
    """(code, body) of an error raised by a route (the table of the module doc)."""
    from canning_tb.analysis.table_page import PageError
    from canning_tb.ingest.table import InputError
    if isinstance(error, QueryError):
        code = error.code if isinstance(error, RouteError) else _STATUS.get(type(error))
        if code is not None:
            return code, dict(error.body, error=scrub_paths(str(error.body.get("error", "")), logdir))
    if isinstance(error, PageError):
        return 400, {"error": str(error)}
    if isinstance(error, RemoteError):  # the remote logdir cannot be read now (credentials, network)
        return 502, {"error": str(error)}
    if isinstance(error, InputError):
        return _input_error(store, error.file, error.problem, logdir)
    if isinstance(error, OSError) and error.filename:  # a file refused (safe_files) or gone
        problem = error.strerror or type(error).__name__
        return _input_error(store, os.fsdecode(error.filename), problem, logdir)
    log.exception("canning: %s failed", path, exc_info=error)
    return 500, {"error": scrub_paths(f"internal error: {type(error).__name__}: {error}", logdir)}


# -- answers -------------------------------------------------------------------------------------
def _enc_hook(value):
    if hasattr(value, "tolist"):  # numpy arrays and scalars (an array's item() fails past one value)
        return value.tolist()
    raise NotImplementedError(f"cannot encode {type(value).__name__}")


_ENCODER = msgspec.json.Encoder(enc_hook=_enc_hook)


def encode(body) -> bytes:
    return _ENCODER.encode(body)


def json_response(request, body, code: int = 200):
    return http_util.Respond(request, encode(body), "application/json", code=code)


def disposition(name: str) -> str:
    """Content-Disposition of a download: RFC 6266 / 5987 (`filename*` in UTF-8), with an ASCII fallback."""
    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\%/' else "_" for c in name) or "download"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


def _started(chunks):
    """The stream with its first chunk computed now (a file that cannot be opened fails here)."""
    iterator = iter(chunks)
    try:
        first = next(iterator)
    except StopIteration:
        return iter(())

    def stream():
        yield first
        yield from iterator
    return stream()


def _answer(request, kind: str, body):
    if kind == "json":
        return json_response(request, body, 202 if isinstance(body, dict) and body.get("loading") else 200)
    if kind == "bytes":
        return http_util.Respond(request, body, "application/octet-stream")
    if kind == "csv":
        from canning_tb.util.csv_cells import csv_chunks
        name, header, rows = body
        chunks = _started(csv_chunks(header, rows))
    else:
        name, chunks = body[0], _started(body[1])
    mimetype = "text/csv" if kind == "csv" else "application/octet-stream"
    response = wrappers.Response(chunks, mimetype=mimetype)
    response.headers["Content-Disposition"] = disposition(name)
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response


def app(handle: Callable[[Query], Any], params: tuple[Param, ...] = (), kind: str = "json",
        store_of: Callable[[], Any] = lambda: None, logdir: str | None = None):
    """The WSGI app of one route: parse the declared query, call handle(query), answer as `kind`
    ("json": a dict, 202 when it says loading; "bytes"; "csv": (name, header, rows); "download":
    (name, chunks)); every error through error_answer."""
    @wrappers.Request.application
    def route(request):
        try:
            return _answer(request, kind, handle(parse(request.args, params)))
        except Exception as error:  # the request boundary: every error mapped in one place
            try:
                store = store_of()
            except Exception:
                store = None
            code, body = error_answer(error, store, logdir, request.path)
            return json_response(request, body, code)
    return route
