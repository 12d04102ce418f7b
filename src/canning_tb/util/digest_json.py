"""A digest (protobuf) as plain JSON-ready Python: ints stay ints, every field present.

protobuf's own MessageToDict writes int64 as strings and drops zero values; the views and
`canning-prof --format=json` want numbers and a stable set of keys.
"""
from __future__ import annotations

import math
from typing import Any

from google.protobuf.descriptor import FieldDescriptor


def to_plain(msg) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in msg.DESCRIPTOR.fields:
        value = getattr(msg, field.name)
        if _is_map(field):
            vfield = field.message_type.fields_by_name["value"]
            # by key: a protobuf map has no order (its iteration order differs from process to process)
            out[field.name] = {k: _scalar_or_msg(vfield, value[k]) for k in sorted(value)}
        elif _is_repeated(field):
            out[field.name] = [_scalar_or_msg(field, v) for v in value]
        else:
            out[field.name] = _scalar_or_msg(field, value)
    return out


def _is_repeated(field) -> bool:
    rep = getattr(field, "is_repeated", None)  # protobuf >= 5; older ones have `label`
    if rep is not None:
        return bool(rep() if callable(rep) else rep)
    return field.label == FieldDescriptor.LABEL_REPEATED


def _is_map(field) -> bool:
    return (field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.has_options
            and field.message_type.GetOptions().map_entry)


def _scalar_or_msg(field, value):
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return to_plain(value)
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return value if math.isfinite(value) else None  # NaN and infinities are not JSON
    return value
