"""The MCP answers' bounds and pages (mcp/bounds.py) at their edges, with every expected length counted by hand,
and list_runs / list_windows held to the files laid out here (issue 46: the survivors of a mutation run over
bounds.py and listing.py). A page keeps rows while they fit the cap less a 200-character margin for the cursor
and the marks: the exact fit is kept, one character more is not; a cursor continues where its page ended and
pages nothing else; a string is cut only past MAX_STRING characters, and only where one row alone is too big."""
import base64
import json
import shutil
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from _mcp import Session
from _two_windows import WINDOW_TS, events, write_run
from conftest import fixture_path

from canning_tb.mcp import bounds, listing as mcp_listing
from canning_tb.mcp.bounds import MAX_CHARS, MAX_STRING, AnswerTooLarge, capped, cursor_for, offset_of, paged
from canning_tb.mcp.server import build
from canning_tb.queries.bounds import INT_BOUND
from canning_tb.queries.errors import BadParameter

Q = {"tool": "kernels", "run": "r", "worker": "w", "window": "1", "limit": 2}
ANSWER = {"x": 1}  # '{"x":1,"rows":[]}' is 17 characters: 59,783 left for the rows (60,000 - 200 - 17)
ROOM = MAX_CHARS - 200 - 17
REASON = "step 4 took 81 ms, 2.4x the median 34 ms"


def text_rows(*lengths) -> list:
    """Rows that are strings of these JSON lengths (a string of n characters dumps to n + 2)."""
    return ["a" * (n - 2) for n in lengths]


def decoded(cursor: str) -> tuple[int, str]:
    offset, mark = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode().split(":")
    return int(offset), mark


def test_rows_that_fill_the_room_exactly_are_all_kept():
    rows = text_rows(30_000, ROOM - 30_001 - 1)  # each row costs its JSON and one comma
    page = paged({**ANSWER, "rows": rows}, "rows", Q, 0, 2)
    assert page["rows"] == rows and "cut_to_fit" not in page and page["next_cursor"] is None
    assert len(bounds.dump(page)) <= MAX_CHARS


def test_one_character_more_cuts_the_page_and_the_cursor_goes_on_from_the_cut():
    rows = text_rows(30_000, ROOM - 30_001)
    page = paged({**ANSWER, "rows": rows}, "rows", Q, 40, 50)  # page 40.. of 50
    assert page["rows"] == rows[:1] and page["cut_to_fit"] is True
    assert offset_of(page["next_cursor"], Q) == 41
    assert offset_of(page["next_cursor"], {**Q, "limit": 7, "cursor": "x"}) == 41  # not part of the question


def test_the_last_page_has_no_cursor_and_a_page_before_it_has():
    rows = text_rows(10, 10, 10)
    assert paged({**ANSWER, "rows": rows}, "rows", Q, 7, 10)["next_cursor"] is None  # rows 7, 8, 9 of 10
    assert offset_of(paged({**ANSWER, "rows": rows}, "rows", Q, 6, 10)["next_cursor"], Q) == 9


def test_a_single_row_over_the_cap_has_its_strings_cut_and_still_pages_on():
    row = {"name": "k" * 70_000, "calls": 3}
    page = paged({**ANSWER, "rows": [row, {"name": "next"}]}, "rows", Q, 0, 2)
    assert page["rows"] == [{"name": "k" * 2000 + "... [68000 more characters cut to fit the answer]", "calls": 3}]
    assert page["strings_cut"] is True and page["cut_to_fit"] is True
    assert offset_of(page["next_cursor"], Q) == 1
    alone = paged({**ANSWER, "rows": [{"name": "k" * 59_000}]}, "rows", Q, 0, 1)  # under the cap: kept whole
    assert alone["rows"] == [{"name": "k" * 59_000}] and "strings_cut" not in alone


def test_strings_are_cut_only_past_max_string_at_every_depth():
    assert MAX_STRING == 2000
    exact, over = "s" * 2000, "s" * 2001
    assert bounds.shorten(exact) == exact
    cut = "s" * 2000 + "... [1 more characters cut to fit the answer]"
    got = bounds.shorten({"a": [over, {"b": over}], "n": 5, "t": exact})
    assert got == {"a": [cut, {"b": cut}], "n": 5, "t": exact}


def test_capped_keeps_an_answer_under_the_cap_cuts_one_over_and_refuses_one_still_over():
    small = {"a": "é" * 10}
    assert capped(small) == (small, '{"a":"' + "é" * 10 + '"}')  # trace text as it is, not \u-escaped
    answer, text = capped({"a": "x" * 61_000})
    assert answer == {"a": "x" * 2000 + "... [59000 more characters cut to fit the answer]", "strings_cut": True}
    assert text == json.dumps(answer, separators=(",", ":"))
    with pytest.raises(AnswerTooLarge, match="ask for fewer rows"):
        capped({"a": ["x" * 100] * 700})  # 700 x 103 characters: no string to cut
    with pytest.raises(ValueError):
        bounds.dump({"a": float("nan")})  # NaN is no JSON


def test_a_cursor_pages_only_its_own_question():
    cursor = cursor_for(Q, 12)
    assert offset_of(cursor, Q) == 12 and offset_of(None, Q) == 0 and offset_of("", Q) == 0
    assert offset_of(cursor, dict(reversed(list(Q.items())))) == 12  # the same arguments in another order
    for other in ({**Q, "window": "2"}, {**Q, "worker": "w2"}, {**Q, "tool": "operators"}, {**Q, "search": "mm"}):
        with pytest.raises(BadParameter) as e:
            offset_of(cursor, other)
        assert str(e.value) == ("this cursor pages another question (other tool or arguments): ask again without a "
                                "cursor, or with the arguments of the call that gave it")
    _, mark = decoded(cursor)
    for offset in (-1, INT_BOUND + 1):  # a cursor edited by hand to a row no page holds
        forged = base64.urlsafe_b64encode(f"{offset}:{mark}".encode()).decode()
        with pytest.raises(BadParameter):
            offset_of(forged, Q)
    assert offset_of(base64.urlsafe_b64encode(f"{INT_BOUND}:{mark}".encode()).decode(), Q) == INT_BOUND
    for junk in ("not a cursor!", *(base64.urlsafe_b64encode(b).decode() for b in (b"12", b"\xff:1"))):
        with pytest.raises(BadParameter, match="is not one this server gave"):
            offset_of(junk, Q)


def test_every_cursor_reads_back_as_its_offset():
    """Cursors are base64 without its padding: every length of offset and fingerprint, and whatever letter the text
    ends in, reads back (600 cursors of 200 questions; the padding a text lacks is 0, 1 or 2 "=")."""
    for window in range(200):
        question = {**Q, "window": str(window)}
        for offset in (0, 7 * window, 10 ** (window % 19) + window):  # offsets of every length, 1 to 19 digits
            assert offset_of(cursor_for(question, offset), question) == offset


def test_an_answer_of_exactly_the_cap_is_kept_whole():
    exact = {"a": "x" * 59_992}  # '{"a":""}' is 8 characters
    assert capped(exact) == (exact, bounds.dump(exact)) and len(bounds.dump(exact)) == MAX_CHARS
    # 8 + 29 x 2003 + 1906 = 60,001 characters, no string over 2,000: 60,020 with ',"strings_cut":true'
    with pytest.raises(AnswerTooLarge, match=r"\(60020 > 60000 characters\): ask for fewer rows \(limit\)$"):
        capped({"a": ["x" * 2000] * 29 + ["x" * 1904]})


def test_first_gives_the_rows_and_how_many_there_are():
    assert bounds.first([5, 6, 7], 2, "ops") == {"ops": [5, 6], "ops_total": 3}


# -- list_runs / list_windows against the files laid out here ----------------------------------------------
@pytest.fixture(scope="module")
def listing(tmp_path_factory):
    """Run "two": 2 ranks x 2 windows (tests/mcp/_two_windows.py); run "one": DLRM's rank 0 trace alone; run "norank":
    one trace without distributedInfo (a job that is not distributed: no rank); run "asked": a handler's window
    whose job triggered it."""
    root = tmp_path_factory.mktemp("listing")
    write_run(root / "log" / "two")
    (root / "log" / "norank").mkdir()
    doc = {"schemaVersion": 1, "traceEvents": events(0, 0)}
    (root / "log" / "norank" / f"solo.{WINDOW_TS[0]}.pt.trace.json").write_text(json.dumps(doc))
    asked = root / "log" / "asked"  # a window the job asked for itself: its manifest names the trigger
    asked.mkdir()
    (asked / "rank0.h.1.000000.pt.trace.json").write_text(json.dumps(doc))
    (asked / "rank0.h.1.000000.canning.json").write_text(json.dumps({
        "rank": 0, "steps": [5, 6], "files": [{"name": "rank0.h.1.000000.pt.trace.json"}],
        "trigger": {"kind": "slow", "step": 4, "step_ns": 81_000_000, "median_ns": 34_000_000, "reason": REASON}}))
    (root / "log" / "one").mkdir()
    name = "worker0_step_12.1694128201545.pt.trace.json.gz"
    shutil.copy(fixture_path("param", "dlrm_8ranks", name), root / "log" / "one" / name)
    app, _ = build(str(root / "log"), str(root / "cache"), digest_wait_s=0)
    session = Session(app)
    try:
        yield session, str(root / "log")
    finally:
        session.close()


def walk(s, tool: str, args: dict, key: str) -> tuple[list, list]:
    """Every row over the pages, and each page's (total, offset, rows)."""
    page, rows, pages = s.answer(tool, args), [], []
    while True:
        rows += page[key]
        pages.append((page["total"], page["offset"], len(page[key])))
        if not page["next_cursor"]:
            return rows, pages
        page = s.answer(tool, {**args, "cursor": page["next_cursor"]})


def test_list_runs_pages_the_runs_with_their_ranks_and_windows(listing):
    listing, logdir = listing
    first = listing.answer("list_runs", {"limit": 1})
    assert {k: first[k] for k in ("logdir", "discovering", "error")} == {"logdir": logdir, "discovering": False,
                                                                       "error": None}
    rows, pages = walk(listing, "list_runs", {"limit": 1}, "runs")
    assert pages == [(4, 0, 1), (4, 1, 1), (4, 2, 1), (4, 3, 1)]
    by_run = {r["run"]: {k: v for k, v in r.items() if k != "run"} for r in rows}
    assert by_run["two"] == {"workers": 2, "ranks": 2, "first_rank": 0, "last_rank": 1, "windows": 4,
                             "window_positions": 2}
    # DLRM's worker0 trace names rank 0 of 8 in its distributedInfo; one window
    assert by_run["one"] == {"workers": 1, "ranks": 1, "first_rank": 0, "last_rank": 0, "windows": 1,
                             "window_positions": 1}
    assert by_run["norank"] == {"workers": 1, "ranks": 0, "first_rank": -1, "last_rank": -1, "windows": 1,
                                "window_positions": 1}  # no rank: -1, never 0


def label(index: int, stamp: str) -> str:
    """What the views call a window: its position from 1 and the instant in its file name (ms since the epoch)."""
    return f"window {index + 1} ({datetime.fromtimestamp(int(stamp) / 1000, timezone.utc):%Y-%m-%d %H:%M:%S} UTC)"


def test_list_windows_pages_each_rank_in_time_order(listing):
    listing, _ = listing
    page = listing.answer("list_windows", {"run": "two", "limit": 1})
    assert (page["run"], page["total"], page["offset"]) == ("two", 4, 0)
    (row,) = page["windows"]
    assert {k: v for k, v in row.items() if k != "digested"} == {
        "worker": "rank0", "rank": 0, "window_index": 0, "window": WINDOW_TS[0], "label": label(0, WINDOW_TS[0]),
        "format": "kineto", "status": "ready", "trigger": None, "snapshots": 0}
    assert row["digested"] in (True, False)  # the server digests in the background meanwhile
    rows, pages = walk(listing, "list_windows", {"run": "two", "limit": 3}, "windows")
    assert pages == [(4, 0, 3), (4, 3, 1)]
    assert [r["label"] for r in rows] == [label(i % 2, WINDOW_TS[i % 2]) for i in range(4)]
    (asked,) = listing.answer("list_windows", {"run": "asked"})["windows"]
    assert (asked["rank"], asked["trigger"]) == (0, REASON)
    assert [(r["worker"], r["rank"], r["window_index"], r["window"]) for r in rows] == [
        ("rank0", 0, 0, WINDOW_TS[0]), ("rank0", 0, 1, WINDOW_TS[1]),
        ("rank1", 1, 0, WINDOW_TS[0]), ("rank1", 1, 1, WINDOW_TS[1])]
    one, _ = walk(listing, "list_windows", {"run": "two", "worker": "rank1"}, "windows")
    assert [(r["worker"], r["window"]) for r in one] == [("rank1", WINDOW_TS[0]), ("rank1", WINDOW_TS[1])]
    cursor = listing.answer("list_windows", {"run": "two", "limit": 1})["next_cursor"]
    failed, text, _ = listing.call("list_windows", {"run": "two", "worker": "rank1", "limit": 1, "cursor": cursor})
    assert failed and "pages another question" in text
    for args, said in (({"run": "three"}, "unknown run"), ({"run": "two", "worker": "rank7"}, "unknown worker")):
        failed, text, _ = listing.call("list_windows", args)
        assert failed and said in text


class GoneStore:
    """A Store whose run "gone" went between runs() and workers() (deleted while listed), and a run with no worker."""
    worker = SimpleNamespace(name="w", rank=3)

    def runs(self):
        return ["a", "gone", "empty", "b"]

    def workers(self, run):
        if run == "gone":
            raise KeyError(run)
        return [] if run == "empty" else [self.worker]

    def windows(self, run, worker):
        return ["x", "y"]


def test_a_run_gone_while_listed_is_left_out_and_the_others_listed():
    host = SimpleNamespace(store=GoneStore, scanner=SimpleNamespace(loading=True, error=None), logdir="/data/log")
    answer = mcp_listing.list_runs(host, None, 10)
    assert [r["run"] for r in answer["runs"]] == ["a", "empty", "b"] and answer["total"] == 4
    assert answer["discovering"] is True
    assert answer["runs"][1] == {"run": "empty", "workers": 0, "ranks": 0, "first_rank": -1, "last_rank": -1,
                                 "windows": 0, "window_positions": 0}
    assert answer["runs"][2] == {"run": "b", "workers": 1, "ranks": 1, "first_rank": 3, "last_rank": 3,
                                 "windows": 2, "window_positions": 2}
