"""All C of canning-tb, each part optional (setup.py builds it where a compiler is found; pure Python
gives the same answer otherwise): the two JSON scanners (ascend_scan.c, kineto_scan.c over json_lex.h),
the Python frames' sweep (kineto_sweep.c) and the events' nesting (tree.c). (The CSVs' number cells had one,
ascend_cells.c: pyarrow.csv beat it, benchmarks/bench_csv.py.) Their fuzz targets are in fuzz/ beside them."""
