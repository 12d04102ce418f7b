"""The plain reading of torch_npu output: the row-at-a-time reader canning-tb had before its readers
became columnar (a Python dict per event, csv.reader rows, one SQLite row at a time), kept here only as
the reference the columnar readers are checked against (test_ascend_columnar_equality.py). Its rules
are the documented ones (docs/formats/ascend.md), including the device-task rule for Task Type "Other"."""
