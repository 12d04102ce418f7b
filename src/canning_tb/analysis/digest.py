"""The digest schema version: bump it on any change to digest.proto that is not a pure field
addition (cached digests of another version are recomputed)."""

SCHEMA_VERSION = 3  # 2: device_wait split out of runtime; the average leaves out a distorted last step; 3: kernel metrics in the events
