"""GET /compare: its declared query and the call into queries/compare.py (docs/http_api.md "GET /compare")."""
from __future__ import annotations

from canning_tb.queries.compare import SIDE_PARAMS, compare_impl

from .boundary import Param

COMPARE_QUERY = tuple(Param(n, required=True) for n in SIDE_PARAMS["target"]) + tuple(
    Param(n, default="") for n in SIDE_PARAMS["base"]) + (
    Param("group_by", default="name"), Param("table", default="operators"), Param("sort", default="abs_delta"),
    Param("order"), Param("search", default=""), Param("offset", "int", default=0), Param("limit", "int"))


def compare_request(store, q) -> dict:
    """The declared query (docs/http_api.md "GET /compare") -> compare_impl."""
    paging = {"sort": q.sort, "search": q.search, "offset": q.offset}
    paging.update({k: q[k] for k in ("order", "limit") if q[k] is not None})
    return compare_impl(store, tuple(q[n] for n in SIDE_PARAMS["base"]), tuple(q[n] for n in SIDE_PARAMS["target"]),
                        q.group_by, q.table, paging)
