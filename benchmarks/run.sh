#!/usr/bin/env bash
# One command for the ingest benchmarks (`make bench`):
#   bash benchmarks/run.sh [--size small|medium|long] [--timeout SECONDS] [--skip-peers] [--only tbprof hta ours]
# 1. Kineto: generates (or reuses) a real torch.profiler trace in benchmarks/out/<size>/run/, creates the peers'
#    venvs once in benchmarks/.venvs/, measures torch-tb-profiler 0.4.3, HTA 0.5.0 and canning-tb (cold, warm)
#    one after another, each in a fresh process: benchmarks/out/results.json and results.md.
# 2. Ascend: grows the real level2 torch_npu rank (and its SQLite export) to the sizes in ASCEND_SIZES
#    (default "small medium": about 88 and 360 MB; add "long" for about 1 GB) and measures
#    torch-tb-profiler-ascend 0.4.0.11 inside TensorBoard, msprof-analyze and canning-tb (cold, warm):
#    benchmarks/out/results_ascend.json and results_ascend.md. ASCEND_SIZES="" skips it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
py="${BENCH_PYTHON:-$root/.venv/bin/python}"
if [ ! -x "$py" ]; then
  echo "benchmarks/run.sh: no project venv python at $py (set BENCH_PYTHON)" >&2
  exit 2
fi
cd "$root"
"$py" "$here/bench_ingest.py" "$@"
sizes="${ASCEND_SIZES-small medium}"
if [ -n "$sizes" ]; then
  # shellcheck disable=SC2086
  "$py" "$here/bench_ascend.py" --sizes $sizes
fi
