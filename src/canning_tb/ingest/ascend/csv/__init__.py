"""The CSVs of a torch_npu window as columns (tables.py), their cells (rows.py, fast.py, cells.py)."""
