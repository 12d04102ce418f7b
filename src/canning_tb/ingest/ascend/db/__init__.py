"""The SQLite export of torch_npu: read.py (the entry), columns.py (SQL to numpy columns), host, device and
side tables."""
