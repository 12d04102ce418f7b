"""Source coverage of a window (Digest.coverage): the files it has, what each covers, which one each
figure family comes from, and the figures two files both give, checked against each other.

- files: each file the reader used, with what it holds; where two files count the same things,
  `rows` / `of_rows` say how many each holds and `sampled` marks a file that holds fewer than the most
  complete count (kernel_details.csv against op_statistic.csv's task counts; the events' HCCL calls
  against communication.json's).
- figures: steps (the trace's ProfilerStep ranges, else CANN's step trace), kernels (the device tasks
  the events hold), kernel_types (op_statistic.csv), cores, communication (the calls of the events,
  completed from communication.json), wait (CANN's measurement, else the ranks' calls matched in the
  cross-rank view), matrix, groups, world_size: each with its source and what it leaves out.
- checks (agree: within CHECK_TOLERANCE): the step's communication (the calls' time in the steps
  against step_trace_time.csv's Communication), CANN's Computing against the trace's compute +
  overlapped (trace steps only), the compute tasks' time against op_statistic.csv's.
"""
from __future__ import annotations

import os

import numpy as np

from ..ingest.table import EventTable, Kind
from . import digest_pb2 as pb
from .cann import source_of
from .kernels import task_coverage
from .step_note import from_events, step_note

CHECK_TOLERANCE = 0.02

_COVERS = {
    "trace_view.json": "host operators, ProfilerStep ranges, device tasks, HCCL operators (the timeline)",
    "kernel_details.csv": "one row per device task (kernel table, compute and communication time)",
    "op_statistic.csv": "CANN's count and time per op type over every task of the window",
    "step_trace_time.csv": "CANN's split of each step (computing, communication, free, Preparing)",
    "communication.json": "CANN's time, wait and transit of every HCCL operator call, per link type",
    "communication_matrix.json": "bytes and time per link, ranks numbered inside each communicator",
    "operator_details.csv": "one row per torch operator call with its times",
    "profiler_metadata.json": "environment, distributed arguments and the communicators (parallel_group_info)",
    "communication_group.json": "msprof-analyze's communicators and their ranks",
    "analysis.db": "CANN's step trace, communication times and matrix (SQLite)",
    "memory_record.csv": "the memory curve per component (PTA, GE, APP)",
    "operator_memory.csv": "allocations by operator",
    "npu_module_mem.csv": "memory reserved per CANN module",
    "api_statistic.csv": "CANN API time per API (host)",
    "l2_cache.csv": "L2 cache hit rate per task",
}


def _name(path: str) -> str:
    return os.path.basename(path)


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.3f} ms"


def _files(table: EventTable, d: pb.Digest, cov: pb.Coverage) -> None:
    held, counted = task_coverage(table)
    cann_calls = len(table.side.get("comm_ops") or ())
    for path in dict.fromkeys(table.meta.source_files):
        name = _name(path)
        covers = _COVERS.get(name) or ("the rank and the profiler settings" if name.startswith("profiler_info")
                                       else "profiler events (host and device)" if ".json" in name else "profiler output")
        f = cov.files.add(file=name, covers=covers, rows=-1, of_rows=-1)
        if name == "kernel_details.csv" and counted >= 0:
            f.rows, f.of_rows = held, counted
            f.sampled = held < counted
            if f.sampled:
                f.note = (f"{held} of the {counted} compute tasks op_statistic.csv counts: the kernel table "
                          f"shows only those; per-type totals and cores come from op_statistic.csv")
        elif name == "op_statistic.csv" and counted >= 0:
            f.rows = f.of_rows = counted
        elif name == "communication.json":
            f.rows = f.of_rows = cann_calls
        elif name == "step_trace_time.csv":
            f.rows = f.of_rows = len(d.cann_steps)
    events_calls = int(np.count_nonzero(table.events["kind"] == int(Kind.COMM_KERNEL)))
    if cann_calls > events_calls and any(f.file == "communication.json" for f in cov.files):
        cov.files.add(file="HCCL operators in the events", covers="the communication the device tasks show",
                      rows=events_calls, of_rows=cann_calls, sampled=True,
                      note=f"{events_calls} of the {cann_calls} HCCL calls communication.json holds; "
                           f"the others are taken from communication.json")


def _figures(table: EventTable, d: pb.Digest, cov: pb.Coverage) -> None:
    env = table.meta.environment
    kernel_file = "kernel_details.csv" if any(_name(p) == "kernel_details.csv" for p in table.meta.source_files) \
        else "trace"
    sampled = next((f for f in cov.files if f.file == "kernel_details.csv" and f.sampled), None)
    add = cov.figures.add
    add(figure="steps", source=d.step_source or "trace",
        note=step_note(d) if from_events(d.step_source)
        else "no ProfilerStep ranges: CANN's steps, Preparing included")
    add(figure="kernels", source=kernel_file, note=sampled.note if sampled else "")
    if d.kernel_types:
        add(figure="kernel_types", source="op_statistic.csv", note="every task of the window, per op type")
        add(figure="cores", source="op_statistic.csv" if sampled else kernel_file)
    comm_source = source_of(table, "comm_ops")
    if d.communication.calls:
        add(figure="communication", source=" + ".join(x for x in (kernel_file, comm_source) if x),
            note="calls the events lack are taken from communication.json" if comm_source else "")
        add(figure="wait", source=d.communication.source or "matched calls (cross-rank view)",
            note="" if d.communication.source else "one rank's events alone cannot tell waiting from moving data")
    if d.communication.links:
        add(figure="matrix", source=source_of(table, "comm_matrix"),
            note="ranks numbered inside each communicator; the cross-rank view maps them to global ranks")
    if d.communication.groups:
        add(figure="groups", source=env.get("source.comm_groups", "") or "the communicators the calls name")
    add(figure="world_size", source=env.get("world_size_source", "") or ("" if d.window.world_size > 0 else "unknown"))


def _check(cov: pb.Coverage, figure: str, a: tuple[str, int], b: tuple[str, int], note: str = "") -> None:
    (sa, va), (sb, vb) = a, b
    top = max(va, vb)
    diff = abs(va - vb) / top if va >= 0 and vb >= 0 and top > 0 else -1.0
    cov.checks.add(figure=figure, source_a=sa, value_a=va, source_b=sb, value_b=vb, difference=diff,
                   agree=0 <= diff <= CHECK_TOLERANCE, note=note)


def _checks(table: EventTable, d: pb.Digest, cov: pb.Coverage) -> None:
    if d.cann_steps:
        numbers = {s.number for s in d.steps}
        cann_comm = sum(max(s.communication_ns, 0) for s in d.cann_steps)
        calls = sum(c.dur_ns for c in d.communication.calls if c.step in numbers or c.step < 0)
        if d.communication.calls:
            _check(cov, "communication", ("HCCL calls of the steps", calls), ("step_trace_time.csv", cann_comm),
                   "the calls' time summed against CANN's Communication of the same steps")
        if d.step_source == "trace":
            computing = sum(s.breakdown.compute_ns + s.breakdown.overlapped_ns for s in d.steps)
            _check(cov, "computing", ("trace", computing),
                   ("step_trace_time.csv", sum(max(s.computing_ns, 0) for s in d.cann_steps)),
                   "compute + overlapped of the trace's steps against CANN's Computing")
    if d.kernel_types:
        compute = sum(k.total_ns for k in d.kernels_by_name if not k.communication)
        _check(cov, "kernel time", ("kernel_details.csv", compute),
               ("op_statistic.csv", sum(max(k.total_ns, 0) for k in d.kernel_types)),
               "compute tasks' time: a sample holds less")


def coverage(table: EventTable, d: pb.Digest) -> pb.Coverage:
    """The window's source coverage (module doc), from its table and the digest built so far."""
    cov = pb.Coverage()
    _files(table, d, cov)
    _figures(table, d, cov)
    _checks(table, d, cov)
    return cov


def coverage_text(cov: pb.Coverage) -> list[str]:
    """The coverage as lines of text (the CLI's "Data" section)."""
    lines = []
    for f in cov.files:
        count = f" ({f.rows} of {f.of_rows})" if f.sampled else (f" ({f.rows})" if f.rows >= 0 else "")
        lines.append(f"  {f.file}{count}: {f.covers}" + (f"; SAMPLE: {f.note}" if f.sampled else ""))
    for x in cov.figures:
        lines.append(f"  {x.figure} from {x.source or 'unknown'}" + (f" ({x.note})" if x.note else ""))
    for c in cov.checks:
        value = (lambda v: str(v) if c.figure == "tasks" else _ms(v))  # noqa: E731
        verdict = "agree" if c.agree else ("differ" if c.difference >= 0 else "unknown")
        lines.append(f"  check {c.figure}: {c.source_a} {value(c.value_a)} vs {c.source_b} {value(c.value_b)}: "
                     f"{verdict}" + (f" by {c.difference:.1%}" if c.difference >= 0 and not c.agree else ""))
    return lines


def coverage_rows(digests: list, ranks: list[int]) -> list[dict]:
    """Per rank of a cross-rank view: where its figures come from, the files that hold a part of the
    window only, and the checks whose sources disagree."""
    out = []
    for digest, rank in zip(digests, ranks):
        cov = digest.coverage
        out.append({"rank": rank, "sources": {f.figure: f.source for f in cov.figures},
                    "sampled": [f"{f.file}: {f.note}" for f in cov.files if f.sampled],
                    "disagree": [f"{c.figure}: {c.source_a} {_ms(c.value_a)} vs {c.source_b} {_ms(c.value_b)}"
                                 for c in cov.checks if not c.agree and c.difference >= 0]})
    return out
