"""The installed wheel's smoke test (cibuildwheel's test-command; not collected by pytest): the package
imports, carries the frontend bundle, reads a tiny Kineto trace written here and digests it.

  python tests/wheel/smoke.py [--expect-c]

--expect-c: every compiled part must import (a wheel built where a C compiler is: cibuildwheel's). Exits
non-zero, naming what is wrong, otherwise."""
import importlib
import importlib.resources
import json
import os
import sys
import tempfile

NATIVE = ("_ascend_scan", "_kineto_scan", "_kineto_sweep", "_tree")


def tiny_trace() -> dict:
    """Two steps of a CPU op holding a kernel launch, and a kernel: what the digest's tables are built from."""
    events = []
    for step in range(2):
        t0 = 1000 + step * 1000
        events += [
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 1, "ts": t0, "dur": 900},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t0 + 10, "dur": 300,
             "args": {"External id": step + 1}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t0 + 20, "dur": 30,
             "args": {"correlation": step + 1, "External id": step + 1}},
            {"ph": "X", "cat": "kernel", "name": "sgemm_kernel", "pid": 0, "tid": 7, "ts": t0 + 60, "dur": 200,
             "args": {"correlation": step + 1, "External id": step + 1, "device": 0, "stream": 7}},
        ]
    return {"schemaVersion": 1, "traceEvents": events}


def main() -> int:
    import canning_tb
    problems = []
    bundle = importlib.resources.files("canning_tb") / "plugin" / "static" / "index.js"
    if not bundle.is_file() or len(bundle.read_bytes()) < 10_000:
        problems.append(f"the frontend bundle is missing from the wheel: {bundle}")
    built = []
    for name in NATIVE:
        try:
            importlib.import_module(f"canning_tb.ingest.native.{name}")
            built.append(name)
        except ImportError:
            pass
    if "--expect-c" in sys.argv and len(built) != len(NATIVE):
        problems.append(f"compiled parts missing: {sorted(set(NATIVE) - set(built))}")

    from canning_tb.analysis.build import build_digest
    from canning_tb.ingest.kineto.read import read_kineto
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "worker0.1.pt.trace.json")
        with open(path, "w") as f:
            json.dump(tiny_trace(), f)
        table = read_kineto(path)
        digest = build_digest(table)
    if len(table) != 8:
        problems.append(f"the tiny trace read to {len(table)} events, not 8")
    if not digest.SerializeToString():
        problems.append("the tiny trace's digest is empty")
    print(f"canning_tb {canning_tb.__file__}: compiled parts {built or 'none'}; {len(table)} events read, digested")
    for p in problems:
        print("smoke test:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
