"""Fuzz targets for the compiled readers (docs/fuzzing.md): one atheris target per function the C
modules give Python (ascend_scan.scan, kineto_scan.scan and fields, kineto_sweep.sweep, tree.nest_sorted,
tree.sum_up), run by `python -m canning_tb.ingest.native.fuzz.run` (`make fuzz`) against copies of the
modules built with clang's AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer's coverage counters.
The targets are scripts run in a child interpreter (the sanitizer runtime must be loaded before Python):
they import the sanitized module by its bare name, never this package."""
