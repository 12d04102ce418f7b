"""All C of canning-tb, each part optional (setup.py builds it where a compiler is found; pure Python
gives the same answer otherwise): the two JSON scanners (ascend_scan.c, kineto_scan.c over json_lex.h),
the CSV number cells (ascend_cells.c), the Python frames' sweep (kineto_sweep.c) and the events' nesting
(tree.c). Their fuzz targets are in fuzz/ beside them."""
