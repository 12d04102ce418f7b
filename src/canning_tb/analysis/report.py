"""Text twins of the views, all from a Digest: op_summary, memory_summary,
communication_summary, suggestions. Each returns a Table-like object with `.rows`,
`.to_csv()`, `.to_dict()` and a printable `__str__`."""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from canning_tb.util.csv_cells import safe_cell

from . import digest_pb2 as pb
from .step_note import from_events, left_out_reason, step_line, step_note


def _ms(ns: float) -> float:
    return round(ns / 1e6, 3)


def _mb(b: float) -> str:
    return f"{b / 1024 ** 2:.2f} MB"


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_csv(self) -> str:
        f = io.StringIO()
        w = csv.writer(f, lineterminator="\n")
        w.writerow([safe_cell(c) for c in self.columns])
        w.writerows([safe_cell(c) for c in r] for r in self.rows)  # names are data, never formulas
        return f.getvalue()

    def to_dict(self) -> dict:
        return {"title": self.title, "columns": list(self.columns), "rows": [list(r) for r in self.rows],
                "notes": list(self.notes)}

    def __str__(self) -> str:
        cells = [[str(c) for c in self.columns]] + [[_fmt(c) for c in r] for r in self.rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.columns))] if self.columns else []
        line = "-" * (sum(widths) + 2 * max(len(widths) - 1, 0))
        out = [self.title, line]
        numeric = [all(isinstance(r[i], (int, float)) or r[i] is None for r in self.rows)
                   for i in range(len(self.columns))]
        for j, r in enumerate(cells):
            out.append("  ".join(c.rjust(widths[i]) if numeric[i] else c.ljust(widths[i])
                                 for i, c in enumerate(r)).rstrip())
            if j == 0:
                out.append(line)
        out.append(line)
        out += self.notes
        return "\n".join(out)

    def __repr__(self) -> str:
        return f"Table({self.title!r}, {len(self.rows)} rows)"


LINE_CHARS = 100  # a text cell longer than this (or of several lines) is cut, ending in "..."


def _fmt(c) -> str:
    if c is None:  # not recorded in the files (.rows keep None; CSV leaves the cell empty)
        return "unknown"
    if isinstance(c, float):
        return f"{c:.3f}"
    text = str(c)
    first = text.split("\n", 1)[0]
    if len(first) > LINE_CHARS or first != text:  # a name of 100 kB must not blow up the report's table
        return first[:LINE_CHARS - 3] + "..."
    return text


def op_summary(digest: pb.Digest, limit: int | None = None) -> Table:
    """Host total time by operator name, longest first; the modelled GFLOP, achieved TFLOP/s and share
    of roof where known (analysis/efficiency)."""
    from .efficiency.summary import op_columns
    t = Table("Operator summary (host time)", ["Op Type", "Calls", "Total(ms)", "Avg(ms)", "Min(ms)", "Max(ms)",
                                               "GFLOP", "TFLOP/s", "Roof(%)"])
    ops = sorted(digest.ops_by_name, key=lambda o: (-o.host_total_ns, o.name))
    for o in ops[:limit] if limit else ops:
        t.rows.append([o.name, int(o.calls), _ms(o.host_total_ns), _ms(o.host_total_ns / o.calls) if o.calls else 0.0,
                       _ms(o.host_total_min_ns), _ms(o.host_total_max_ns), *op_columns(o)])
    if not t.rows:
        t.notes.append("No operator in this window: the profiler recorded no host operator (a window that "
                       "ended before any step ran, or activities without ProfilerActivity.CPU).")
    return t


def _setting(digest: pb.Digest, key: str) -> bool | None:
    """A profiler setting as the window's manifest (or the profile) recorded it; None when unknown."""
    v = digest.window.environment.get(f"settings.{key}")
    return {"true": True, "false": False}.get(v) if v is not None else None


def memory_summary(digest: pb.Digest) -> Table:
    t = Table("Memory summary", ["Device", "Allocations", "Frees", "Allocated", "Peak memory", "Peak reserved", "Capacity"])
    n_empty = 0
    for m in digest.memory:
        # None: the file does not record it (printed "unknown", an empty CSV cell), never 0
        t.rows.append([m.device, int(m.allocations), int(m.frees), _mb(m.allocated_bytes),
                       _mb(m.peak_allocated_bytes) if m.peak_allocated_bytes >= 0 else None,
                       _mb(m.peak_reserved_bytes) if m.peak_reserved_bytes >= 0 else None,
                       _mb(m.capacity_bytes) if m.capacity_bytes > 0 else None])
        n_empty = max(n_empty, m.empty_cache_calls)
    if not t.rows:
        if _setting(digest, "profile_memory"):
            t.notes.append("No memory records: profile_memory=True was on, but no tensor was allocated or freed "
                           "in the window.")
        else:  # off, or not said (a bare trace): the switch is what fills it
            t.notes.append("No memory records: the window was profiled without profile_memory=True. Pass "
                           "ps.Profile(..., profile_memory=True) (canning-prof performance --profile-memory) to "
                           "record every allocation; it slows the steps down.")
    if n_empty:
        t.notes.append(f"Warning: empty_cache was called {n_empty} times; it slows the steps that follow "
                       f"(the allocator has to get the memory back).")
    return t


def communication_summary(digest: pb.Digest) -> Table:
    """Per collective (wait / transfer summed over its calls), and this rank's mean step in the notes:
    the figures of summary.communication_figures (docs/glossary.md)."""
    from .summary import communication_figures
    t = Table("Communication summary", ["Collective", "Group", "Calls", "Total(ms)", "Avg(ms)", "Bytes",
                                        "Transit bytes", "Wait(ms)", "Transfer(ms)", "Bandwidth(GB/s)"])
    labels = {g.group: g.label or g.group for g in digest.communication.groups}  # names, not raw hashes
    for c in digest.communication.collectives:
        t.rows.append([c.kind, labels.get(c.group, c.group), int(c.calls), _ms(c.total_ns), _ms(c.total_ns / c.calls) if c.calls else 0.0,
                       int(c.bytes) if c.bytes >= 0 else None, int(c.transit_bytes) if c.transit_bytes > 0 else None,
                       _ms(c.wait_ns) if c.wait_ns >= 0 else None, _ms(c.transfer_ns) if c.transfer_ns >= 0 else None,
                       round(c.bandwidth_gbps, 3) if c.bandwidth_gbps >= 0 else None])
    cm = digest.communication
    if not t.rows:
        world = digest.window.world_size
        t.notes.append("No collective in this window: " + (
            "a single process (world size 1) runs no communication. Profile the ranks of a torch.distributed job "
            "(DDP, FSDP, tensor / pipeline parallel) to fill it." if world <= 1 else
            f"this rank (of {world}) ran no collective while the window recorded; record steps that communicate "
            f"(e.g. the backward pass with DDP), with the device activities on."))
    if cm.source:
        t.notes.append(f"Wait, transfer, transit bytes and bandwidth as CANN measured them ({cm.source}).")
    if not from_events(digest.step_source):
        t.notes.append(step_note(digest))
    if cm.collectives:
        mean = communication_figures(digest)["mean"]
        share = mean["not_overlapped_share"]
        t.notes.append(f"Mean step: communication {_ms(mean['total_ns'])} ms, of which {_ms(mean['not_overlapped_ns'])} ms "
                       f"not overlapped with compute ({'unknown' if share is None else f'{100 * share:.1f}%'} of the step).")
        if mean["wait_ns"] >= 0:
            t.notes.append(f"Mean step: wait {_ms(mean['wait_ns'])} ms, transfer {_ms(mean['transfer_ns'])} ms "
                           f"(p2p wait {_ms(mean['p2p_wait_ns'])} ms).")
        else:
            t.notes.append("Wait and transfer: unknown from this rank's trace alone (they need the other ranks' "
                           "profiles of the same steps: canning-prof view on the run folder, or TensorBoard).")
    return t


@dataclass
class Suggestions(Table):
    """The findings (analysis/rules) as a table, printed as the profiling suite's
    "Optimization Suggestions:" text; `to_dict()["findings"]` has every field for tools."""
    hits: list = field(default_factory=list)

    def to_dict(self) -> dict:
        from .rules.text import findings_json
        return {**super().to_dict(), "findings": findings_json(self.hits)}

    def __str__(self) -> str:
        from .rules.text import suggestions_text
        if not self.hits and self.notes:  # why there is none, not a bare "nothing"
            return "Optimization Suggestions:\n" + "\n".join(f"  {n}" for n in self.notes)
        return suggestions_text(self.hits)


def suggestions(digest: pb.Digest, extra_hits=()) -> Suggestions:
    """The window's findings (and `extra_hits`, e.g. the cross-rank ones), ranked by estimated gain."""
    from .rules.finding import rank_key
    hits = sorted([*digest.rule_hits, *extra_hits], key=rank_key)
    t = Suggestions("Suggestions", ["Severity", "Suggestion", "Gain(ms/step)", "Speedup"], hits=hits)
    for h in hits:
        t.rows.append([h.severity, f"{h.title}. {h.detail}", _ms(h.gain_ns) if h.gain_ns >= 0 else None,
                       round(h.speedup, 3) if h.speedup > 0 else None])
    if not t.rows:
        n = len(digest.steps)
        t.notes.append(f"No finding: no rule's check crossed its threshold over the {n} step{'' if n == 1 else 's'} "
                       f"measured" + (" (one step: the step-to-step variation, and the findings that need it, are "
                                      "unknown; call prof.step() once per step)." if n <= 1 else "."))
    return t


_CATS = [("Compute", "compute_ns"), ("Overlapped", "overlapped_ns"), ("Communication", "communication_ns"),
         ("Memcpy", "memcpy_ns"), ("Memset", "memset_ns"), ("Device wait", "device_wait_ns"), ("Runtime", "runtime_ns"), ("DataLoader", "dataloader_ns"),
         ("Host", "host_ns"), ("Idle", "idle_ns")]


def step_summary(digest: pb.Digest) -> Table:
    """Step times and their breakdown (ms), one row per step plus the average."""
    t = Table("Step time breakdown (ms)", ["Step", "Total(ms)"] + [c for c, _ in _CATS])
    for s in digest.steps:
        label = f"{s.number} ({left_out_reason(s)})" if s.distorted else str(s.number)
        t.rows.append([label, _ms(s.dur_ns)] + [_ms(getattr(s.breakdown, f)) for _, f in _CATS])
    a = digest.average
    if len(digest.steps) > 1:
        t.rows.append(["average", _ms(a.total_ns)] + [_ms(getattr(a, f)) for _, f in _CATS])
    if step_note(digest):
        t.notes.append(step_note(digest))
    if digest.step_clock == "device" and digest.step_source == "trace":
        t.notes.append("Steps measured on the device: it runs behind the host, so each step runs from its first "
                       "device event to the next step's.")
    kept = set(digest.average_steps)
    t.notes.extend(line for s in digest.steps if (line := step_line(s, s.number in kept)))
    return t


def kernel_summary(digest: pb.Digest, limit: int | None = None) -> Table:
    t = Table("Kernel summary (device time)", ["Kernel", "Calls", "Total(ms)", "Avg(ms)", "Min(ms)", "Max(ms)"])
    ks = list(digest.kernels_by_name)
    for k in ks[:limit] if limit else ks:
        t.rows.append([k.name, int(k.calls), _ms(k.total_ns), _ms(k.total_ns / k.calls) if k.calls else 0.0,
                       _ms(k.min_ns), _ms(k.max_ns)])
    return t


def _pct(share: float) -> float | None:
    return None if share < 0 else round(100 * share, 2)


def device_summary(digest: pb.Digest) -> Table:
    """The overview's GPU / NPU efficiency card (digest gpu_efficiency / npu_efficiency), one row
    per device; None (n/a) where the trace lacks what a figure needs."""
    t = Table("Device efficiency (%, over the steps the average keeps)",
              ["Device", "Utilization", "Est. SM efficiency", "Est. achieved occupancy", "Tensor Cores / cube share"])
    for g in digest.gpu_efficiency:
        t.rows.append([f"GPU {g.device}: {g.name}", _pct(g.utilization), _pct(g.sm_efficiency),
                       None if g.achieved_occupancy_pct < 0 else round(g.achieved_occupancy_pct, 2),
                       _pct(g.tensor_core_share)])
    for n in digest.npu_efficiency:
        t.rows.append([f"NPU {n.device}: {n.name}", _pct(n.ai_core_utilization), None, None, _pct(n.cube_share)])
        t.notes.append(f"NPU {n.device} PMU: " + (", ".join(f"{m.name} {m.value:.3f}" for m in n.pmu) or "not collected"))
    return t


def window_report(digest: pb.Digest, top: int = 10) -> str:
    """All the text twins of one window, as one printable block."""
    w = digest.window
    world = w.world_size if w.world_size > 0 else "unknown"
    one = " (the whole window: no step marks)" if digest.step_source == "window" else ""
    head = f"rank {w.rank}/{world}  format {w.format}  steps {len(digest.steps)}{one}  " \
           f"average step {_ms(digest.average.total_ns)} ms"
    parts = [head, str(step_summary(digest)), str(op_summary(digest, limit=top))]
    if digest.kernels_by_name:
        parts.append(str(kernel_summary(digest, limit=top)))
    if digest.gpu_efficiency or digest.npu_efficiency:
        parts.append(str(device_summary(digest)))
    if digest.memory:
        parts.append(str(memory_summary(digest)))
    if digest.communication.collectives:
        parts.append(str(communication_summary(digest)))
    if digest.coverage.files or digest.coverage.figures:
        parts.append(data_text(digest))
    parts.append(str(suggestions(digest)))
    from .rules.text import critical_path_text
    if digest.critical_path:
        parts.append(critical_path_text(digest.critical_path))
    return "\n\n".join(parts)


def ranks_report(digests: list, top: int | None = None, analysis: dict | None = None) -> str:
    """The cross-rank analysis (cluster.analyse_ranks, or `analysis` when given) as text: one row per
    rank, or, with more than `top` ranks, the spread of each figure over the ranks and the outliers."""
    from .cluster import analyse_ranks
    r = analysis if analysis is not None else analyse_ranks(digests)
    if top is not None and len(r["ranks"]) > top:
        t = spread_table(r)
    else:
        t = _rank_table(r)
    if r["breakdown_source"] != "trace":
        t.notes.append(f"Computing, communication, free and Preparing as CANN measured them ({r['breakdown_source']}); "
                       f"Other: the rest of the step (the host's tail after the last device task).")
    waits: dict[str, list] = {}
    for x in r["ranks"]:
        waits.setdefault(x.get("wait_source") or "unknown", []).append(x["rank"])
    if any(x["communication_total_ns"] > 0 for x in r["ranks"]):
        t.notes.append("Wait and transfer from: " + "; ".join(f"{src} (rank{'s' if len(rs) > 1 else ''} "
                                                             f"{','.join(map(str, rs))})" for src, rs in waits.items())
                       + ".")
    if r.get("world_size", -1) > 0:
        t.notes.append(f"World size {r['world_size']} ({r.get('world_size_source') or 'the files'}).")
    for x in r.get("coverage", ()):
        for note in x["sampled"] + x["disagree"]:
            t.notes.append(f"Data, rank {x['rank']}: {note}.")
    lost = r.get("matrix_unmapped") or {}
    if lost.get("links"):
        t.notes.append(f"Communication matrix: {lost['links']} links ({_mb(lost['bytes'])}) are numbered inside "
                       f"communicators no file maps to global ranks; left out of the matrix.")
    from .rules import cluster_hits
    from .rules.text import suggestions_text
    hits = cluster_hits(r, digests)
    from .parallelism import recognise
    s = slow_rank_table(r, hits, pipeline=recognise(digests).pipeline if digests else False)
    return str(t) + "\n\n" + str(s) + "\n\n" + suggestions_text(hits).replace(
        "Optimization Suggestions:", "Optimization Suggestions (across ranks):", 1) + _paths_text(r)


HOPS_SHOWN = 16  # hops listed per step in the text (the MCP tool and /critical_path_ranks page through them)


def _hop_text(h: dict) -> str:
    """One hop of the path across ranks, its times on its rank's own clock from its window's start."""
    what = (f"transfer of {h['after']} once rank {h['waited_for']} arrived (the last)" if h["what"] == "transfer"
            else f"own work after {h['after']}")
    return (f"    rank {h['rank']} {h['start_ns'] / 1e6:.3f} to {h['end_ns'] / 1e6:.3f} ms "
            f"({h['ns'] / 1e6:.3f} ms): {what}")


def _paths_text(r: dict, limit: int = 8) -> str:
    """The critical path of each step across ranks: which ranks held it (analysis/graph/ranks.py)."""
    paths = r.get("critical_path") or []
    if not paths:
        return ""
    out = ["", "", "Critical path across ranks (which rank held each step; clocks aligned through the collectives):"]
    for p in paths[:limit]:
        total = max(p["dur_ns"], 1)
        held = sorted(p["by_rank"].items(), key=lambda kv: -kv[1])
        out.append(f"  step {p['step']}: {p['dur_ns'] / 1e6:.3f} ms: " + ", ".join(
            f"rank {rank} {ns / 1e6:.3f} ms ({100 * ns / total:.0f}%)" for rank, ns in held[:6]))
        out += [_hop_text(h) for h in p["hops"][:HOPS_SHOWN]]
        more = p["hops_total"] - min(len(p["hops"]), HOPS_SHOWN)
        if more > 0:
            out.append(f"    ... {more} more hops (the MCP tool critical_path, scope ranks, step {p['step']})")
    moved = [o for o in r.get("clock_offsets", []) if o["offset_ns"]]
    if moved:
        out.append("  Clock offsets applied: " + ", ".join(f"rank {o['rank']} {o['offset_ns'] / 1e3:+.1f} us"
                                                          for o in moved[:16]))
    return "\n".join(out)


def _ms_known(ns: int) -> float | None:
    return None if ns < 0 else _ms(ns)


def _rank_table(r: dict) -> Table:
    """One row per rank: its step and the parts of it (analysis/cluster_rows.py), wait and transfer."""
    cann = r["breakdown_source"] != "trace"
    parts = ["Computing", "Communication", "Free"] + (["Preparing", "Other"] if cann else [])
    t = Table("Ranks (ms, mean step)", ["Rank", "Step", *parts, "Wait", "P2P wait", "Transfer"])
    fields = ["computing_ns", "communication_ns", "free_ns"] + (["preparing_ns", "other_ns"] if cann else [])
    for x in r["ranks"]:
        t.rows.append([int(x["rank"]), _ms(x["step_ns"]), *[_ms_known(x[f]) for f in fields],
                       *[_ms_known(x[f]) for f in ("wait_ns", "p2p_wait_ns", "transfer_ns")]])
    return t


def data_text(digest: pb.Digest) -> str:
    """The window's source coverage (analysis/coverage.py) as text: the Overview's "Data" panel."""
    from .coverage import coverage_text
    return "\n".join(["Data: the files, what each covers, where each figure comes from"] + coverage_text(digest.coverage))


def slow_rank_table(analysis: dict, hits, pipeline: bool = False) -> Table:
    """msprof-analyze's spread of each figure over the ranks, and whether it is a finding: a spread over
    5 % of the mean can still be under the floors (docs/rules.md), or be between the pipeline's stages
    (which hold different layers: compared by the stage finding instead)."""
    found = {h.rule.removeprefix("slow_rank_"): h for h in hits if h.rule.startswith("slow_rank_")}
    s = Table("Slow rank check: (max - min) / mean, and the finding it gives", ["Metric", "Ratio", "Over 5 %",
                                                                                  "Finding"])
    why = ("no: the ranks compared are different pipeline stages (the stage finding compares them)" if pipeline
           else "no: under the significance floors (docs/rules.md)")
    for x in analysis["slow_ranks"]:
        hit = found.get(x["metric"])
        verdict = hit.title if hit else (why if x["flagged"] else "no")
        s.rows.append([x["metric"], round(x["ratio"], 4), "yes" if x["flagged"] else "no", verdict])
    return s


def spread_table(analysis: dict) -> Table:
    """Each figure over the ranks (cluster_spread.distributions): quartiles, the extreme ranks, outliers."""
    t = Table(f"Ranks (ms, mean step): spread over {len(analysis['ranks'])} ranks",
              ["Figure", "Min", "Q1", "Median", "Q3", "Max", "Highest ranks", "Lowest ranks", "Outliers"])
    for x in analysis["distributions"]:
        named = lambda rows: ", ".join(str(e["rank"]) for e in rows)  # noqa: E731
        outliers = ", ".join(f"{e['rank']} ({e['side']})" for e in x["outliers"][:5])
        more = x["outliers_total"] - min(len(x["outliers"]), 5)
        t.rows.append([x["metric"].removesuffix("_ns"), _ms(x["min"]), _ms(x["q1"]), _ms(x["median"]), _ms(x["q3"]),
                       _ms(x["max"]), named(x["top"]), named(x["bottom"]),
                       (outliers + (f" +{more}" if more > 0 else "")) or "none"])
    t.notes.append("Outliers: more than 5 % from the median and a robust z-score beyond 3.5 (median absolute "
                   "deviation); every rank: --format=json.")
    return t
