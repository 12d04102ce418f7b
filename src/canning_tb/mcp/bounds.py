"""Every answer bounded: the size cap, paging cursors, and the answer as JSON text.

A table's page holds at most `limit` rows and fits MAX_CHARS of JSON (rows are cut to fit, at least
one); `next_cursor` continues where the page ends. A cursor is opaque to the client and bound to the
question it pages (the tool and its arguments but the cursor and the limit): used with another
question it is refused, so a walk over the pages sees every row once. Strings from the trace are
returned as they are (JSON-quoted); only a single row too big for the cap has its longest strings
cut, and says so.
"""
from __future__ import annotations

import base64
import hashlib
import json

from canning_tb.queries.bounds import INT_BOUND
from canning_tb.queries.errors import BadParameter, QueryError

MAX_CHARS = 60_000  # of JSON text per answer (about 15,000 tokens), stated in every tool's description
MAX_STRING = 2_000  # a string longer than this is cut only where one row alone is over MAX_CHARS
_MARGIN = 200  # room for next_cursor and the cut marks


class AnswerTooLarge(QueryError):
    """An answer over MAX_CHARS even with its strings cut: the caller must ask for fewer rows."""

UNITS = {"*_ns": "integer nanoseconds (durations; instants relative to the window start)",
         "*_bytes, bytes": "integer bytes", "*_share": "fraction of 1", "*_gbps": "10^9 bytes per second",
         "-1 or null": "unknown (never 0)"}


def dump(answer) -> str:
    """Compact JSON; trace strings kept as they are (no ASCII escaping), JSON-quoted."""
    return json.dumps(answer, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _fingerprint(question: dict) -> str:
    asked = {k: v for k, v in question.items() if k not in ("cursor", "limit")}
    return hashlib.sha1(json.dumps(asked, sort_keys=True, default=str).encode()).hexdigest()[:12]


def cursor_for(question: dict, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{offset}:{_fingerprint(question)}".encode()).decode().rstrip("=")


def offset_of(cursor: str | None, question: dict) -> int:
    """The first row a cursor points at (0 without one); 400 for a cursor of another question."""
    if not cursor:
        return 0
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        offset, mark = text.split(":")
        offset = int(offset)
    except (ValueError, UnicodeDecodeError):
        raise BadParameter(f"cursor {cursor!r} is not one this server gave: ask again without a cursor") from None
    if mark != _fingerprint(question) or not 0 <= offset <= INT_BOUND:
        raise BadParameter("this cursor pages another question (other tool or arguments): "
                              "ask again without a cursor, or with the arguments of the call that gave it")
    return offset


def paged(answer: dict, rows_key: str, question: dict, offset: int, total: int) -> dict:
    """answer[rows_key] cut to fit MAX_CHARS (at least one row) and `next_cursor` (None on the last page)."""
    rows = answer[rows_key]
    room = MAX_CHARS - _MARGIN - len(dump({**answer, rows_key: []}))
    kept, used = 0, 0
    for row in rows:
        used += len(dump(row)) + 1
        if used > room and kept:
            break
        kept += 1
    if kept < len(rows):
        answer = {**answer, rows_key: rows[:kept], "cut_to_fit": True}
    if kept == 1 and len(dump(answer)) > MAX_CHARS:
        answer = {**answer, rows_key: [shorten(answer[rows_key][0])], "strings_cut": True}
    end = offset + kept
    answer["next_cursor"] = cursor_for(question, end) if end < total else None
    return answer


def shorten(value):
    """`value` with every string over MAX_STRING characters cut there, the cut said in the string."""
    if isinstance(value, str) and len(value) > MAX_STRING:
        return f"{value[:MAX_STRING]}... [{len(value) - MAX_STRING} more characters cut to fit the answer]"
    if isinstance(value, dict):
        return {k: shorten(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shorten(v) for v in value]
    return value


def capped(answer: dict) -> tuple[dict, str]:
    """(answer, its JSON text) within MAX_CHARS: its long strings cut where it is over (said in
    `strings_cut`); 500 if even that is over (a tool that does not bound its answer: a bug)."""
    text = dump(answer)
    if len(text) > MAX_CHARS:
        answer = {**shorten(answer), "strings_cut": True}
        text = dump(answer)
    if len(text) > MAX_CHARS:
        raise AnswerTooLarge(f"the answer is over the size cap ({len(text)} > {MAX_CHARS} characters): "
                             "ask for fewer rows (limit)")
    return answer, text


def first(rows: list, limit: int, key: str) -> dict:
    """The first `limit` rows of a list the digest already bounds, with how many there are: {key, key_total}."""
    return {key: rows[:limit], f"{key}_total": len(rows)}
