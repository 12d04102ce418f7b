"""Tables whose rows grow with the trace (operators by name, shape or call stack; kernels) searched,
sorted and cut into pages here, so an answer holds at most MAX_LIMIT rows whatever the trace holds
(200,000 distinct operator names answered whole were 54 MB).

`page(rows, fields, search_fields, sort=, order=, search=, offset=, limit=) -> Page`:
- search: the rows where any of `search_fields` holds `search` (case-insensitive: casefold),
  all rows when it is empty; `total` counts them.
- sort: one of `fields` (a row attribute, or "a.b": attribute b of the row's message a, as
  "work.tflops"); none: the rows keep their order. Numbers compare as
  numbers, text casefolded; `order` "asc" or "desc" (default: "desc" for numbers, "asc" for text).
  Rows with equal numbers go by name (casefolded, A to Z, in either order) where the rows have a
  `name`; what is still equal keeps its order (the sort is stable in both directions).
- offset / limit: the rows [offset, offset + limit) of that order; 1 <= limit <= MAX_LIMIT.
A bad parameter raises PageError (the route answers 400 with its message).

The order of the last few (rows, sort, order, search) asked is kept (ORDERS_KEPT), so paging through
200,000 rows sorts them once.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from canning_tb.util.lru import LRU

MAX_LIMIT = 1000
ORDERS_KEPT = 8


class PageError(ValueError):
    """A sort, order, offset or limit the table cannot take; the message says which."""


@dataclass
class Page:
    rows: list  # the page's rows (the row objects given)
    total: int  # rows that match the search
    offset: int
    limit: int
    sort: str | None
    order: str | None
    search: str

    def head(self) -> dict:
        """What an answer says about its page, beside the rows."""
        return {"total": self.total, "offset": self.offset, "limit": self.limit, "sort": self.sort,
                "order": self.order, "search": self.search}


_orders = LRU(ORDERS_KEPT)  # (id(rows), sort, order, search) -> (rows, order of the matching rows)


def page(rows, fields: tuple, search_fields: tuple, *, sort: str | None = None, order: str | None = None,
         search: str = "", offset: int = 0, limit: int = MAX_LIMIT) -> Page:
    if sort is not None and sort not in fields:
        raise PageError(f"sort must be one of {', '.join(fields)}, not {sort!r}")
    if order not in (None, "asc", "desc"):
        raise PageError(f"order must be asc or desc, not {order!r}")
    if offset < 0:
        raise PageError(f"offset must be 0 or more, not {offset}")
    if not 1 <= limit <= MAX_LIMIT:
        raise PageError(f"limit must be from 1 to {MAX_LIMIT}, not {limit}")
    if sort is not None and order is None:
        order = "asc" if rows and isinstance(value(rows[0], sort), str) else "desc"
    chosen = _ordered(rows, search_fields, sort, order, search)
    return Page([rows[i] for i in chosen[offset:offset + limit].tolist()], len(chosen), offset, limit, sort, order,
                search)


def value(row, field: str):
    """The row's `field`; "a.b" reads attribute b of attribute a."""
    for part in field.split("."):
        row = getattr(row, part)
    return row


def _ordered(rows, search_fields: tuple, sort: str | None, order: str | None, search: str) -> np.ndarray:
    """The indexes of the rows that match, in the order asked (kept for the next pages)."""
    memo = (id(rows), search_fields, sort, order, search)
    kept = _orders.get(memo)
    if kept is not None and kept[0] is rows:
        return kept[1]
    chosen = _matching(rows, search_fields, search)
    if sort is not None:
        chosen = chosen[_sorted(rows, chosen, sort, order == "desc")]
    _orders.put(memo, (rows, chosen))  # the rows are held, so their id is not reused while kept
    return chosen


def _matching(rows, search_fields: tuple, search: str) -> np.ndarray:
    needle = search.casefold()
    if not needle:
        return np.arange(len(rows))
    return np.fromiter((i for i, row in enumerate(rows)
                        if any(needle in getattr(row, name).casefold() for name in search_fields)), np.int64)


def _sorted(rows, chosen: np.ndarray, sort: str, descending: bool) -> np.ndarray:
    """Positions into `chosen` that sort its rows by `sort`, ties in their order."""
    values = [value(rows[i], sort) for i in chosen.tolist()]
    if values and isinstance(values[0], str):
        keys = [value.casefold() for value in values]
        return np.array(sorted(range(len(keys)), key=keys.__getitem__, reverse=descending), np.int64)
    numbers = np.array(values, np.float64 if values and isinstance(values[0], float) else np.int64)
    keys = [np.arange(len(numbers))]
    if values and hasattr(rows[0], "name"):  # equal numbers: by name, as the tables always showed them
        names = [rows[i].name.casefold() for i in chosen.tolist()]
        by_name = np.empty(len(names), np.int64)
        by_name[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
        keys.append(by_name)
    return np.lexsort((*keys, -numbers if descending else numbers))
