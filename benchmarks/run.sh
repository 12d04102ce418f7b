#!/usr/bin/env bash
# One command for the ingest benchmark (the lead wires `make bench` to it):
#   bash benchmarks/run.sh [--size small|medium|long] [--timeout SECONDS] [--skip-peers] [--only tbprof hta ours]
# Generates (or reuses) a real torch.profiler trace in benchmarks/out/<size>/run/, creates the peers' venvs once in
# benchmarks/.venvs/, measures torch-tb-profiler 0.4.3, HTA 0.5.0 and canning-tb (cold, warm) one after another,
# each in a fresh process, and writes benchmarks/out/results.json and benchmarks/out/results.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
py="${BENCH_PYTHON:-$root/.venv/bin/python}"
if [ ! -x "$py" ]; then
  echo "benchmarks/run.sh: no project venv python at $py (set BENCH_PYTHON)" >&2
  exit 2
fi
cd "$root"
exec "$py" "$here/bench_ingest.py" "$@"
