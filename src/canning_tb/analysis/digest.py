"""The digest schema version and helpers around the generated digest_pb2."""
from __future__ import annotations

from . import digest_pb2

SCHEMA_VERSION = 2  # 2: device_wait split out of runtime; the average leaves out a distorted last step

Digest = digest_pb2.Digest


def to_bytes(d: digest_pb2.Digest) -> bytes:
    return d.SerializeToString(deterministic=True)


def from_bytes(b: bytes) -> digest_pb2.Digest:
    d = digest_pb2.Digest()
    d.ParseFromString(b)
    return d
