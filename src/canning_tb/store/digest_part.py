"""Part of a window's digest: a message class built from Digest's own descriptor with only some of
its fields, so that the views across 1,000 ranks read each rank's digest (about 250 KB, mostly the
operator and kernel tables) without building the tables they do not show: the fields left out are
not parsed (protobuf keeps their bytes as unknown fields). A part answers the same attribute names
as a Digest for the fields it has, and an AttributeError for the others (never a silent default).

`RANKS`: what the run overview, the communication view (/cluster: analysis/cluster.py,
summary.rank_row, the cross-rank rules) and the CLI's run report (summary.window_figures,
communication_figures) read of each rank, and the Overview's trends (queries/trends.py).
"""
from __future__ import annotations

import functools
import zlib

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

# field -> None (all of it) | the sub-fields kept | COUNTED (only how many: each element left as bytes)
COUNTED = "counted"
RANKS = (
    ("schema_version", None), ("window", None), ("steps", None), ("average", None),
    ("ops_by_name", ("name", "host_self_ns", "device_self_ns", "device_total_ns")),
    ("kernels_by_name", COUNTED),  # summary.has_device_work: whether there are any
    ("memory", ("device", "peak_allocated_bytes", "capacity_bytes")),
    ("communication", None), ("cann_steps", None), ("average_steps", None), ("coverage", None), ("step_clock", None),
    ("step_source", None),  # summary.window_figures says where the steps come from
    ("analysis_revision", None),  # a digest made by other code is marked as old (queries/sections.py old_analysis)
    ("rule_hits", None),  # each window's own findings, beside the cross-rank ones (CLI, without --detail)
)


@functools.lru_cache(maxsize=None)
def part_class(fields: tuple):
    """The message class of a Digest with only `fields` ((name, None | sub-field names | COUNTED), ...)."""
    from canning_tb.analysis import digest_pb2

    source = descriptor_pb2.FileDescriptorProto()
    digest_pb2.DESCRIPTOR.CopyToProto(source)
    package = f"{source.package}.part{zlib.crc32(repr(fields).encode())}"
    types = {m.name: m for m in source.message_type}
    digest = types["Digest"]
    kept = {name: spec for name, spec in fields}
    chosen = [f for f in digest.field if f.name in kept]
    del digest.field[:]
    digest.field.extend(chosen)
    for field in digest.field:
        spec = kept[field.name]
        if spec == COUNTED:
            field.type = field.TYPE_BYTES
            field.ClearField("type_name")
        elif spec is not None:
            _trim(source, field, spec)
    _rename(source.message_type, f".{source.package}.", f".{package}.")
    source.name, source.package = f"{package}.proto", package
    pool = descriptor_pool.DescriptorPool()
    pool.Add(source)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.Digest"))


def _trim(source, field, keep: tuple) -> None:
    """Point `field` at a copy of its message type with only the `keep` fields."""
    original = field.type_name.rsplit(".", 1)[1]
    trimmed = source.message_type.add()
    trimmed.CopyFrom(next(m for m in source.message_type if m.name == original))
    trimmed.name = f"{original}Part{field.number}"
    chosen = [f for f in trimmed.field if f.name in keep]
    del trimmed.field[:]
    trimmed.field.extend(chosen)
    field.type_name = field.type_name.rsplit(".", 1)[0] + "." + trimmed.name


def _rename(messages, old: str, new: str) -> None:
    """The types fields name, moved from package `old` to `new` (nested messages too)."""
    for message in messages:
        for field in message.field:
            if field.type_name:
                field.type_name = field.type_name.replace(old, new, 1)
        _rename(message.nested_type, old, new)
