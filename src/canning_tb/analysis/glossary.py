"""The glossary: one entry per figure (label, one-line definition, the function that computes it).

glossary.json is the one table: the frontend imports it for its tooltips, docs/glossary.md is
written from it (`python -m canning_tb.analysis.glossary > docs/glossary.md`; a test keeps them
equal), and the text reports quote it.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

HEADER = """# Glossary: what each figure means

One definition per figure; the views' tooltips, the CLI and `prof.*_summary()` all use it.
Which function computes which figure (everything else reads these, never recomputes):
- `analysis/summary.py` `step_shares` / `window_figures`: compute share (host operators on CPU-only),
  communication not hidden, DataLoader, idle (nothing recorded), device idle (what suggestions quote);
  `category_shares`: each breakdown category's share of the step; every share is `summary.share`. The
  digest holds times and counts only; the shapes of these figures: `analysis/figures.py`.
- `analysis/communication/wait_transfer.py` `call_splits` (per call), `step_figures` (per step), `rank_figures`
  (mean step + window), `collective_sums` (per collective): wait, p2p wait, transfer.
- `analysis/summary.py` `communication_figures`: this rank's communication per step / mean step / window.
- `analysis/steps.py` `breakdowns`: the step breakdown categories; `cluster.py` `analyse_ranks`: per-rank rows.
- `analysis/context.py` `host_self`, `ops.py` `op_stats`: host self / total, device self / total.
- `analysis/gpu_metrics.py` / `npu_metrics.py`: device efficiency (GPU utilization, est. SM efficiency,
  est. achieved occupancy, Tensor Core share; AI Core utilisation, core times, PMU ratios);
  `tensor_cores.py`: Tensor Core eligibility and shares per operator; `modules.py`: the module tree.
- `analysis/efficiency/`: modelled FLOPs / bytes per operator and kernel, peaks, achieved rates, share of
  roof, bound, MFU, HBM bandwidth used (how well the busy time is used; "device efficiency" above is how
  busy the device was, and is the only figure named efficiency).
Unknown is never 0: a figure the files do not record is `-1` in the digest, `null` in JSON, "–" in views.
"""


@lru_cache(maxsize=1)
def entries() -> dict[str, dict]:
    """{key: {label, tip, source}} in the table's order."""
    return json.loads((Path(__file__).with_name("glossary.json")).read_text(encoding="utf-8"))


def tip(key: str) -> str:
    return entries()[key]["tip"]


def markdown() -> str:
    lines = [HEADER, "| Figure | Definition | Computed by |", "|---|---|---|"]
    lines += [f"| {e['label']} | {e['tip']} | `{e['source']}` |" for e in entries().values()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
