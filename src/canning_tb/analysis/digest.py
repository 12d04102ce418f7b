"""The digest schema version: bump it on any change to digest.proto that is not a pure field
addition (cached digests of another version are recomputed)."""

SCHEMA_VERSION = 6  # 2: device_wait split out of runtime; the average leaves out a distorted last step;
#   3: wait / transfer by analysis/communication/wait_transfer.py (per step, merged intervals), p2p wait not in wait_ns
#   4: findings (RuleHit fields 300-399, Evidence)
#   5: kernel measurements kept in the events (EventTable.metrics): device efficiency, modules
#   6: roofline and work rates (analysis/efficiency); coverage, kernel_types, step_clock; a CANN-only step
#      includes Preparing
