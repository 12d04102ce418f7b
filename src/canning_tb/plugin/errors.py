"""The plugin's own HTTP errors (a request's method, origin or rate, a capture's conflict): what only a
route can refuse. Every selection's error is a canning_tb.queries.errors.QueryError, mapped to a status
in boundary.py."""
from __future__ import annotations

from canning_tb.queries.errors import QueryError


class RouteError(QueryError):
    """Answered as JSON {"error": message, **extra} with HTTP status `code`."""

    def __init__(self, code: int, message: str, **extra):
        super().__init__(message, **extra)
        self.code = code
