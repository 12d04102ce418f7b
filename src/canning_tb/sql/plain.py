"""An answer's rows as plain JSON-ready Python: DECIMAL (DuckDB's SUM of integers) as a number, NaN as None
(unknown), bytes, dates and anything else DuckDB can give as text."""
from __future__ import annotations

import decimal
import math


def plain(value):
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return None
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def rows(table) -> list[dict]:
    """The Arrow table's rows as dicts of plain values."""
    return [{k: plain(v) for k, v in row.items()} for row in table.to_pylist()]


def columns(table) -> list[dict]:
    return [{"name": f.name, "type": str(f.type)} for f in table.schema]
