"""The CSVs of a torch_npu window as columns (tables.py): read by pyarrow.csv (arrow.py), the csv module where
pyarrow refuses a file (rows.py, with the scalar rules), their cells converted a column at a time (columns.py)."""
