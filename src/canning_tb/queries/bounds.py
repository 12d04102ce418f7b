"""The one bound on every integer a caller may give a selection (ns, pixels, offsets, steps, positions), the
same at every front door: the plugin's query parser (plugin/boundary.py: 400) and the MCP tools' argument
schemas (mcp/tools.py: a tool error), so that no number reaches numpy or protobuf to overflow there."""
from __future__ import annotations

from .errors import BadParameter

INT_BOUND = 1 << 62  # ns, pixels, offsets: past this a number is a mistake, not a wish


def check_int(name: str, value: int, text: str | None = None) -> int:
    """`value`, or BadParameter naming `name` when it is past INT_BOUND either way."""
    if abs(value) > INT_BOUND:
        shown = text if text is not None else (str(value) if abs(value).bit_length() <= 128 else "a huge number")
        raise BadParameter(f"{name} is out of range: {shown[:80]!r}")
    return value
