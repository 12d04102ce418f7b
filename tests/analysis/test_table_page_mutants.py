"""The operator and kernel tables' search, sort and paging (analysis/table_page.py) on rows made here, every expected
order worked out by hand (issue 46: before, only the plugin's routes reached it, through a TensorBoard)."""
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from canning_tb.analysis.table_page import MAX_LIMIT, PageError, page, value


@dataclass
class Row:
    name: str
    calls: int
    share: float
    kernel: str = ""
    work: SimpleNamespace = None


FIELDS = ("name", "calls", "share", "kernel", "work.tflops")


def rows():
    t = SimpleNamespace
    return [Row("b", 5, 0.5, "gemm", t(tflops=3.0)), Row("A", 5, 0.25, "ADD_kernel", t(tflops=1.0)),
            Row("c", 7, 0.25, "relu", t(tflops=2.0)), Row("aten::add_", 1, 0.125, "x", t(tflops=0.5))]


def names(p):
    return [r.name for r in p.rows]


@pytest.mark.parametrize("kw, message", [
    (dict(sort="bytes"), "sort must be one of name, calls, share, kernel, work.tflops, not 'bytes'"),
    (dict(sort="calls", order="up"), "order must be asc or desc, not 'up'"),
    (dict(offset=-1), "offset must be 0 or more, not -1"),
    (dict(limit=0), f"limit must be from 1 to {MAX_LIMIT}, not 0"),
    (dict(limit=MAX_LIMIT + 1), f"limit must be from 1 to {MAX_LIMIT}, not {MAX_LIMIT + 1}"),
])
def test_a_bad_parameter_is_named(kw, message):
    with pytest.raises(PageError) as e:
        page(rows(), FIELDS, ("name",), **kw)
    assert str(e.value) == message


def test_the_limits_and_offset_at_their_edges_are_taken():
    r = rows()
    assert names(page(r, FIELDS, ("name",), limit=1)) == ["b"]
    assert len(page(r, FIELDS, ("name",), limit=MAX_LIMIT).rows) == 4
    p = page(r, FIELDS, ("name",), offset=4)
    assert p.rows == [] and p.total == 4  # past the end: no row, the count still whole
    assert names(page(r, FIELDS, ("name",), offset=1, limit=2)) == ["A", "c"]


def test_numbers_sort_descending_by_default_ties_by_name_a_to_z_either_way():
    """calls: b 5, A 5, c 7, aten::add_ 1. Descending: 7 (c), then the 5s by name casefolded (a < b: A, b), then 1.
    Ascending: 1, the 5s again A then b, 7."""
    r = rows()
    p = page(r, FIELDS, ("name",), sort="calls")
    assert (p.order, names(p)) == ("desc", ["c", "A", "b", "aten::add_"])
    assert names(page(r, FIELDS, ("name",), sort="calls", order="asc")) == ["aten::add_", "A", "b", "c"]


def test_floats_sort_as_numbers_and_text_ascending_by_default_casefolded():
    """share: b .5, A .25, c .25, aten::add_ .125: descending b, then A and c (.25, by name), then aten::add_.
    kernel text: ADD_kernel, gemm, relu, x (casefolded: 'add_kernel' < 'gemm'); default order for text: asc."""
    r = rows()
    assert names(page(r, FIELDS, ("name",), sort="share")) == ["b", "A", "c", "aten::add_"]
    p = page(r, FIELDS, ("name",), sort="kernel")
    assert (p.order, names(p)) == ("asc", ["A", "b", "c", "aten::add_"])
    assert names(page(r, FIELDS, ("name",), sort="kernel", order="desc")) == ["aten::add_", "c", "b", "A"]


def test_a_field_of_a_field_sorts_and_reads():
    """work.tflops: b 3, A 1, c 2, aten::add_ .5: descending b, c, A, aten::add_."""
    r = rows()
    assert value(r[2], "work.tflops") == 2.0 and value(r[0], "name") == "b"
    assert names(page(r, FIELDS, ("name",), sort="work.tflops")) == ["b", "c", "A", "aten::add_"]


def test_equal_text_keeps_its_order_in_both_directions():
    """Kernel names 'x', 'X', 'a' (x and X equal casefolded): ascending a, x, X; descending x, X, a (not X, x)."""
    r = [Row("1", 0, 0.0, "x"), Row("2", 0, 0.0, "X"), Row("3", 0, 0.0, "a")]
    assert names(page(r, FIELDS, ("name",), sort="kernel")) == ["3", "1", "2"]
    assert names(page(r, FIELDS, ("name",), sort="kernel", order="desc")) == ["1", "2", "3"]


def test_rows_without_a_name_keep_their_order_among_equal_numbers():
    """Rows with no `name`: values 2, 1, 2, 1 by position 0..3. Descending: the 2s in their order (0, 2), then the 1s
    (1, 3); ascending: 1, 3, 0, 2."""
    r = [SimpleNamespace(v=2, tag="p"), SimpleNamespace(v=1, tag="q"), SimpleNamespace(v=2, tag="r"),
         SimpleNamespace(v=1, tag="s")]
    tags = lambda p: [x.tag for x in p.rows]  # noqa: E731
    assert tags(page(r, ("v",), ("tag",), sort="v")) == ["p", "r", "q", "s"]
    assert tags(page(r, ("v",), ("tag",), sort="v", order="asc")) == ["q", "s", "p", "r"]


def test_search_is_casefolded_over_every_search_field_and_counts_its_rows():
    """'ADD' matches aten::add_ by its name and A by its kernel ADD_kernel: 2 rows, in their order; searching the names
    only: aten::add_ alone; the same search over the other fields does not reuse the first answer."""
    r = rows()
    p = page(r, FIELDS, ("name", "kernel"), search="ADD")
    assert (names(p), p.total) == (["A", "aten::add_"], 2)
    p = page(r, FIELDS, ("name",), search="ADD")
    assert (names(p), p.total) == (["aten::add_"], 1)
    assert page(r, FIELDS, ("kernel",), search="zzz").total == 0


def test_the_head_says_the_page():
    """'a' (casefolded) is in the names A and aten::add_ only: 2 rows, by calls descending A (5), aten::add_ (1); the
    page from offset 1 holds aten::add_."""
    p = page(rows(), FIELDS, ("name",), sort="calls", search="a", offset=1, limit=2)
    assert p.head() == {"total": 2, "offset": 1, "limit": 2, "sort": "calls", "order": "desc", "search": "a"}
    assert names(p) == ["aten::add_"]


def test_no_sort_keeps_the_rows_order_and_says_no_order():
    p = page(rows(), FIELDS, ("name",))
    assert (p.sort, p.order, names(p)) == (None, None, ["b", "A", "c", "aten::add_"])
    assert page([], FIELDS, ("name",), sort="calls").order == "desc"  # no row to tell text from numbers


def test_whole_numbers_past_2_53_keep_their_order():
    """9007199254740993 (2**53 + 1) and 9007199254740992 (2**53) are one float64 apart from nothing: as whole numbers
    the larger (row 'b') comes first descending; read as floats they would tie and go by name (a first)."""
    r = [Row("a", 2**53, 0.0), Row("b", 2**53 + 1, 0.0)]
    assert names(page(r, FIELDS, ("name",), sort="calls")) == ["b", "a"]


def test_a_single_row_sorts():
    assert names(page([Row("only", 1, 0.0)], FIELDS, ("name",), sort="calls")) == ["only"]


class Counted:
    """A row whose `calls` counts its reads: the order of a (rows, sort, order, search) is worked out once."""
    reads = 0

    def __init__(self, name, calls):
        self.name, self._calls = name, calls

    @property
    def calls(self):
        Counted.reads += 1
        return self._calls


def test_the_next_page_of_the_same_order_reads_no_row_again():
    """Five rows, sorted by calls descending, order given (so nothing reads a row to choose it): the first page reads
    each row's calls once (5); the next page of the same order reads none; another order reads them again (5)."""
    r = [Counted(n, c) for n, c in (("a", 3), ("b", 1), ("c", 5), ("d", 2), ("e", 4))]
    Counted.reads = 0
    assert [x.name for x in page(r, ("calls",), ("name",), sort="calls", order="desc", limit=2).rows] == ["c", "e"]
    assert Counted.reads == 5
    assert [x.name for x in page(r, ("calls",), ("name",), sort="calls", order="desc", offset=2, limit=2).rows] == \
        ["a", "d"]
    assert Counted.reads == 5
    assert [x.name for x in page(r, ("calls",), ("name",), sort="calls", order="asc", limit=1).rows] == ["b"]
    assert Counted.reads == 10
