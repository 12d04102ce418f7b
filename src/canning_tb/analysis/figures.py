"""The shapes of the figures analysis/summary.py computes from digests, as the routes and the CLI's JSON
serve them (field for field: tests/frontend/test_frontend_types.py checks these Structs against api.ts
and against the live answers). Times in ns, sizes in bytes, shares as fractions of the step; None
(JSON null) where a figure is unknown. What each figure means: analysis/glossary.json.
"""
from __future__ import annotations

from typing import Literal

import msgspec


class CategoryShares(msgspec.Struct):
    """Each step breakdown category's time over the step's (summary.category_shares)."""
    compute: float | None
    overlapped: float | None
    communication: float | None
    memcpy: float | None
    memset: float | None
    device_wait: float | None
    runtime: float | None
    dataloader: float | None
    host: float | None
    idle: float | None


class StepShares(msgspec.Struct):
    """The headline shares of one breakdown (summary.step_shares)."""
    compute_share: float | None
    compute_source: str  # "device", or "host" on a window without device work
    comm_not_hidden_share: float | None
    dataloader_share: float | None
    idle_share: float | None
    device_idle_share: float | None  # None without device work


Metric = Literal["device_self_ns", "host_self_ns"]


class SlowestOp(msgspec.Struct):
    name: str
    ns: int
    metric: Metric
    share: float  # of that metric summed over the operators


class MemoryFigure(msgspec.Struct):
    device: str
    peak_bytes: int
    capacity_bytes: int  # -1 unknown


class WindowFigures(StepShares):
    """A window's headline figures (GET /overview `figures`; the CLI's report)."""
    steps: int
    total_step_ns: int
    average_step_ns: int
    average_shares: CategoryShares  # of the average step, each category
    memory: list[MemoryFigure]
    slowest_op: SlowestOp | None
    # where the steps come from: "trace" (ProfilerStep ranges), "step_marks" (the loop's prof.step()
    # calls), "window" (none: the window is ONE step), or CANN's file; step_note says it in words
    step_source: str = "trace"
    step_note: str = ""


class StepCollective(msgspec.Struct):
    kind: str
    group: str
    calls: int
    total_ns: int
    bytes: int  # -1 unknown


class CommFigureRow(msgspec.Struct):
    """This rank's communication over one breakdown (a step, the mean step or the window)."""
    dur_ns: int
    total_ns: int
    overlapped_ns: int
    not_overlapped_ns: int
    not_overlapped_share: float | None  # summary.comm_not_hidden_share of the breakdown
    wait_ns: int  # -1 unknown
    p2p_wait_ns: int
    transfer_ns: int


class CommStepRow(CommFigureRow):
    step: int
    collectives: list[StepCollective]


class CommFigures(msgspec.Struct):
    """summary.communication_figures (GET /communication `figures`)."""
    mean: CommFigureRow
    window: CommFigureRow
    steps: list[CommStepRow]
    calls_truncated: bool


class RankFigures(msgspec.Struct):
    """A row of /cluster `per_rank`: whose it is (queries/ranks.py), then summary.rank_row, -1 and ""
    where a figure is absent."""
    rank: int
    worker: str
    window: str
    steps: int
    step_ns: int
    compute_share: float  # -1 unknown
    comm_not_hidden_share: float  # -1 unknown
    memory_device: str
    memory_peak_bytes: int
    memory_capacity_bytes: int
    slowest_op: str
    slowest_op_ns: int
    slowest_op_metric: Metric


class FigureRange(msgspec.Struct):
    min: float
    min_rank: int
    max: float
    max_rank: int


class RunSlowestOp(msgspec.Struct):
    name: str
    ns: int
    rank: int
    metric: Metric


class RunSummary(msgspec.Struct):
    """summary.run_summary: the whole run over the rank rows."""
    ranks: int
    step_ns: FigureRange | None
    compute_share: FigureRange | None
    comm_not_hidden_share: FigureRange | None
    memory_peak_bytes: FigureRange | None
    slowest_op: RunSlowestOp | None


def plain(figures: msgspec.Struct) -> dict:
    """A Struct as the JSON-ready dict every caller reads (nested Structs too)."""
    return msgspec.to_builtins(figures)


class TrendPoint(msgspec.Struct):
    """One window's key figures on the Overview's trends chart (GET /trends `windows`; analysis/trends.py)."""
    window: str
    label: str
    step: int  # the window's last step number (its position among the worker's windows without steps)
    values: dict[str, float]  # trend_scalars: only the figures the window has
    old_analysis: bool  # its digest was made by other analysis code (queries/sections.py old_analysis)
