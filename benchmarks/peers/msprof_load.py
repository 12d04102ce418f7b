"""Peer: msprof-analyze 26.2.0's cluster analysis (`-m all`) on one grown rank, in .venv-peers.

    .venv-peers/bin/python benchmarks/peers/msprof_load.py <cluster_dir> <out_dir>

<cluster_dir> holds links to the `*_ascend_pt` rank folders (the tool writes beside its input). It reads
the files of the same data it analyses across ranks: step_trace_time.csv, communication.json,
communication_matrix.json, kernel_details.csv (not trace_view.json). Last stdout line: JSON with load_s.
"""
import json
import os
import shutil
import subprocess
import sys
import time


def main() -> int:
    cluster_dir, out_dir = sys.argv[1], sys.argv[2]
    shutil.rmtree(out_dir, ignore_errors=True)
    exe = os.path.join(os.path.dirname(sys.executable), "msprof-analyze")
    t0 = time.perf_counter()
    p = subprocess.run([exe, "-d", cluster_dir, "-m", "all", "-o", out_dir], capture_output=True, text=True)
    load_s = time.perf_counter() - t0
    ok = p.returncode == 0
    if not ok:
        sys.stderr.write((p.stdout + p.stderr)[-3000:])
    print(json.dumps({"tool": "msprof-analyze 26.2.0", "ok": ok, "mode": "cluster analysis -m all",
                      "load_s": round(load_s, 3)}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
