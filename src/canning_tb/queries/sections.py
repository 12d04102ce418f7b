"""The sections of one window's digest as JSON: one `*_impl(store, run, worker, window, ...)`
per route, plain arguments in, a dict out (no request, no HTTP: testable as they are).

Every figure comes from the digest or from `canning_tb.analysis`; these functions select and
serialise. Times are sent relative to the window start (-1 stays -1 = absent).
"""
from __future__ import annotations

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.digest import analysis_revision
from canning_tb.analysis.memory_range import memory_range
from canning_tb.analysis.step_note import left_out_reason, step_line
from canning_tb.analysis.summary import (category_shares, communication_figures, has_device_work, kernel_total_ns,
                                         window_figures)
from canning_tb.util.digest_json import to_plain

from .errors import BadParameter, NotFound, short_path, window_digest

GROUPS = {"name": "ops_by_name", "shape": "ops_by_shape", "stack": "ops_by_stack"}
OP_SEARCH = ("name",)  # what the operators' search looks in
KERNEL_GROUPS = {"name": "kernels_by_name", "op": "kernels_by_op"}
KERNEL_SEARCH = ("name", "op_name")


def relative(ts: int, t0: int) -> int:
    return ts - t0 if ts >= 0 else ts  # -1 means absent and stays so


def _head(store, run: str, worker: str, window: str, digest) -> dict:
    win = digest.window
    info = to_plain(win)
    info["duration_ns"] = max(0, win.end_ns - win.start_ns) if win.end_ns >= 0 and win.start_ns >= 0 else -1
    problems = [{**to_plain(p), "file": short_path(store, p.file)} for p in digest.problems]
    old = old_analysis(digest)
    if old:
        problems.insert(0, {"file": "", "message": old, "severity": "warning"})
    return {"run": run, "worker": worker, "window": window, "info": info, "old_analysis": old, "problems": problems}


def old_analysis(digest) -> str | None:
    """What to tell of a digest made by other analysis code (the store serves one only when the window's
    files are not here to make it again: store/lookup.py); None for this code's own."""
    made = digest.analysis_revision
    if made == analysis_revision():
        return None
    by = f"revision {made}" if made else "a canning-tb older than revisions"
    return (f"Digest made by other analysis code ({by}; this viewer: {analysis_revision()}) and the window's "
            "files are not here to make it again: its figures may differ from the other windows'.")


def overview_impl(store, run: str, worker: str, window: str) -> dict:
    digest = window_digest(store, run, worker, window)
    t0 = digest.window.start_ns
    steps, kept = [], set(digest.average_steps)
    for message in digest.steps:
        step = to_plain(message)
        step["start_ns"] = relative(message.start_ns, t0)
        step["shares"] = category_shares(message.breakdown)
        # why the average leaves it out, said as the text report says it (analysis/step_note.py)
        step["left_out"], step["note"] = left_out_reason(message), step_line(message, message.number in kept)
        steps.append(step)
    return {**_head(store, run, worker, window, digest), "schema_version": digest.schema_version,
            "steps": steps, "average": to_plain(digest.average),
            "rule_hits": [to_plain(r) for r in digest.rule_hits], "figures": window_figures(digest),
            "coverage": to_plain(digest.coverage), "step_clock": digest.step_clock or "host", **device_efficiency(digest),
            # the host side of data loading; None in a digest made by code older than the section
            "input_pipeline": to_plain(digest.input_pipeline) if digest.HasField("input_pipeline") else None}


def device_efficiency(digest) -> dict:
    """The overview's GPU / NPU card: the digest's per-device efficiency figures, as they are."""
    return {"gpu_efficiency": [to_plain(g) for g in digest.gpu_efficiency],
            "npu_efficiency": [to_plain(n) for n in digest.npu_efficiency]}


def modules_impl(store, run: str, worker: str, window: str) -> dict:
    """The nn.Module tree (empty when the trace has no module calls: with_modules / with_stack off)."""
    digest = window_digest(store, run, worker, window)
    t0 = digest.window.start_ns
    nodes = []
    for node in digest.modules:
        plain = to_plain(node)
        plain["first_start_ns"] = relative(node.first_start_ns, t0)
        nodes.append(plain)
    return {**_head(store, run, worker, window, digest), "modules": nodes}


def _page(rows, row_type, search_fields: tuple, paging: dict | None):
    """One page of a table (analysis/table_page.py); 400 for a bad parameter."""
    from canning_tb.analysis.table_page import PageError, page
    try:
        return page(rows, scalar_fields(row_type), search_fields, **(paging or {}))
    except PageError as e:
        raise BadParameter(str(e)) from None


def scalar_fields(row_type) -> tuple:
    """The fields a table of `row_type` rows (a digest message) can be sorted on: its scalar fields,
    and those of its single sub-messages as "work.tflops" (analysis/efficiency's columns)."""
    fields = row_type.DESCRIPTOR.fields
    nested = tuple(f"{f.name}.{g.name}" for f in fields if f.message_type is not None and not _repeated(f)
                   and not f.message_type.GetOptions().map_entry
                   for g in f.message_type.fields if g.message_type is None and not _repeated(g))
    return tuple(f.name for f in fields if f.message_type is None and not _repeated(f)) + nested


def _repeated(field) -> bool:
    return field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED  # protobuf < 5


def _group(groups: dict, group_by: str) -> str:
    if group_by not in groups:
        raise BadParameter(f"group_by must be one of {', '.join(groups)}, not {group_by!r}")
    return groups[group_by]


def suggestions_impl(store, run: str, worker: str, window: str) -> dict:
    """The window's findings (analysis/rules), in the digest's order (ranked by estimated gain),
    their timeline evidence relative to the window start."""
    digest = window_digest(store, run, worker, window)
    t0 = digest.window.start_ns
    findings = []
    for hit in digest.rule_hits:
        finding = to_plain(hit)
        for item in finding["evidence"]:
            item["ts_ns"] = relative(item["ts_ns"], t0)
        findings.append(finding)
    return {**_head(store, run, worker, window, digest), "findings": findings}


def operators_impl(store, run: str, worker: str, window: str, group_by: str = "name",
                   paging: dict | None = None) -> dict:
    """One page of the operators (paging: sort, order, search, offset, limit of table_page.page)."""
    table = _group(GROUPS, group_by)
    digest = window_digest(store, run, worker, window)
    rows = getattr(digest, table)
    found = _page(rows, pb.OpStat, OP_SEARCH, paging)
    return {**_head(store, run, worker, window, digest), "group_by": group_by,
            "has_device": has_device_work(digest), "has_stacks": len(digest.ops_by_stack) > 0,
            "all_rows": len(rows), **found.head(), "rows": [to_plain(o) for o in found.rows]}


def operators_csv(store, run: str, worker: str, window: str, group_by: str = "name", paging: dict | None = None):
    """(file name, header, rows) of every operator that matches the search, in the order asked."""
    table = _group(GROUPS, group_by)
    rows = getattr(window_digest(store, run, worker, window), table)
    fields = [f for f in scalar_fields(pb.OpStat) if group_by != "name" or f not in ("input_shapes", "call_stack")]
    return _csv(rows, pb.OpStat, fields, OP_SEARCH, paging, f"operators-{group_by}")


def _csv(rows, row_type, fields: list, search_fields: tuple, paging: dict | None, name: str):
    """Every matching row, a page at a time (the order is computed once and kept by table_page)."""
    asked = {key: value for key, value in (paging or {}).items() if key not in ("offset", "limit")}
    first = _page(rows, row_type, search_fields, asked)

    from canning_tb.analysis.table_page import value

    def cells():
        for offset in range(0, first.total, first.limit):
            for row in _page(rows, row_type, search_fields, {**asked, "offset": offset}).rows:
                yield [value(row, f) for f in fields]
    return f"{name}.csv", fields, cells()


def operator_detail_impl(store, run: str, worker: str, window: str, name: str, shapes: str | None = None) -> dict:
    """One operator: the ops_by_stack rows of its name (and input shapes, where those rows carry
    them) and the kernels it launched (the `kernels` of its ops_by_name / ops_by_shape row)."""
    digest = window_digest(store, run, worker, window)
    source = digest.ops_by_name if shapes is None else digest.ops_by_shape
    op = next((o for o in source if o.name == name and (shapes is None or o.input_shapes == shapes)), None)
    if op is None:
        with_shapes = "" if shapes is None else f" with input shapes {shapes!r}"
        raise NotFound(f"unknown operator: {name!r}{with_shapes}")
    stacks = [o for o in digest.ops_by_stack if o.name == name]
    by_shape = shapes is not None and any(o.input_shapes for o in stacks)
    if by_shape:
        stacks = [o for o in stacks if o.input_shapes == shapes]
    return {"run": run, "worker": worker, "window": window, "name": name, "input_shapes": shapes,
            "stacks_by_shape": by_shape,  # False: the digest groups stacks by name only
            "calls": op.calls,
            "stacks": [{k: v for k, v in to_plain(o).items() if k != "kernels"} for o in stacks],
            "kernels": [to_plain(k) for k in op.kernels]}


def kernels_impl(store, run: str, worker: str, window: str, paging: dict | None = None) -> dict:
    """Both kernel tables, each one page (the same sort, order, search, offset and limit)."""
    digest = window_digest(store, run, worker, window)
    by_name, by_op = (_page(getattr(digest, table), pb.KernelStat, KERNEL_SEARCH, paging)
                      for table in KERNEL_GROUPS.values())
    return {**_head(store, run, worker, window, digest), **by_name.head(),
            "kernels_by_name": [to_plain(k) for k in by_name.rows], "kernels_by_name_all": len(digest.kernels_by_name),
            "total_ns": kernel_total_ns(digest),
            "kernels_by_op": [to_plain(k) for k in by_op.rows], "kernels_by_op_total": by_op.total,
            "kernels_by_op_all": len(digest.kernels_by_op),
            "cores": [to_plain(c) for c in digest.cores]}


def kernels_csv(store, run: str, worker: str, window: str, group_by: str = "name", paging: dict | None = None):
    """(file name, header, rows) of every kernel of one table that matches the search, in the order asked."""
    table = _group(KERNEL_GROUPS, group_by)
    rows = getattr(window_digest(store, run, worker, window), table)
    fields = [f for f in scalar_fields(pb.KernelStat) if group_by == "op" or f != "op_name"]
    return _csv(rows, pb.KernelStat, fields, KERNEL_SEARCH, paging, f"kernels-{group_by}")


def _event(event, t0: int) -> dict:
    out = to_plain(event)
    out["alloc_ns"], out["free_ns"] = relative(event.alloc_ns, t0), relative(event.free_ns, t0)
    return out


def memory_impl(store, run: str, worker: str, window: str) -> dict:
    digest = window_digest(store, run, worker, window)
    t0 = digest.window.start_ns
    devices = []
    for mem in digest.memory:
        device = to_plain(mem)
        device["curve_ts_ns"] = [relative(ts, t0) for ts in mem.curve_ts_ns]
        device["peak_ts_ns"] = relative(mem.peak_ts_ns, t0)
        device["events"] = [_event(e, t0) for e in mem.events]
        devices.append(device)
    return {**_head(store, run, worker, window, digest), "devices": devices}


def memory_range_impl(store, run: str, worker: str, window: str, device: str,
                      start_ns: int | None = None, end_ns: int | None = None) -> dict:
    """The allocations of `device` in [start_ns, end_ns] (relative ns; both None: the whole window)."""
    if start_ns is not None and end_ns is not None and start_ns > end_ns:
        raise BadParameter(f"start_ns ({start_ns}) is after end_ns ({end_ns})")
    digest = window_digest(store, run, worker, window)
    mem = next((m for m in digest.memory if m.device == device), None)
    if mem is None:
        raise NotFound(f"unknown device: {device!r}")
    t0 = digest.window.start_ns
    found = memory_range(mem, None if start_ns is None else start_ns + t0, None if end_ns is None else end_ns + t0)
    return {"device": device, "start_ns": start_ns, "end_ns": end_ns, **found,
            "events": [_event(e, t0) for e in found["events"]]}


def communication_impl(store, run: str, worker: str, window: str) -> dict:
    digest = window_digest(store, run, worker, window)
    t0 = digest.window.start_ns
    comm = to_plain(digest.communication)
    for call in comm["calls"]:
        call["start_ns"] = relative(call["start_ns"], t0)
    # this rank alone: wait / transfer where CANN measured them, else unknown (the view takes the
    # ranks' own from /cluster, the same definition with the calls matched across ranks)
    return {**_head(store, run, worker, window, digest), "communication": comm,
            "figures": communication_figures(digest)}
