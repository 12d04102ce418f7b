"""--mode=view: the report of every window under a path, as text or JSON."""
from __future__ import annotations

import logging
import os
import sys

from canning_tb.ingest.table import InputError
from canning_tb.queries.errors import scrub_paths, short_path
from canning_tb.util.digest_json import to_plain

from .output import VIEW_SCHEMA, dump_json
from .progress import ProgressBar
from .targets import targets_for

log = logging.getLogger("canning_tb.cli")


def window_error(store, file: str, problem: str) -> str:
    """ "<file>: <problem>": the file relative to the logdir, as the user knows it, and no absolute path in
    the problem either (the plugin's errors say them so too)."""
    return f"{scrub_paths(short_path(store, file), store.logdir)}: {scrub_paths(problem, store.logdir)}"


def digest_all(targets, parts: set = frozenset()) -> list[tuple]:
    """(target, digest or None, error or None) for each target, digesting in parallel; the targets whose
    id is in `parts` are read as the part of their digest that the ranks' report reads (Target.part)."""
    store = targets[0].store
    if len(targets) > 1:
        store.prefetch([(t.run, t.worker, t.window.id) for t in targets], progress=ProgressBar("windows"))
    out = []
    for target in targets:
        try:
            out.append((target, target.part() if id(target) in parts else target.digest(), None))
        except InputError as e:  # the file relative to the logdir, as the user knows it
            out.append((target, None, window_error(store, e.file, e.problem)))
        except Exception as e:  # window boundary: a bug met in one window must not cost the others their report
            log.exception("canning: window %s failed", target.window.path)
            out.append((target, None, window_error(store, target.window.path, f"internal error ({type(e).__name__}: "
                                                                              f"{e}); the traceback is on stderr")))
    return out


def read_all(targets, detail: bool = False, workers=()) -> tuple[list, list, set]:
    """(results of digest_all, rank_groups, the detailed windows' ids): the windows that share a position
    with other workers are read in part (the report sums them up across ranks), then the whole digest
    of any of them whose own report is wanted after all."""
    from canning_tb.analysis.digest_pb2 import Digest
    shared = set() if detail else {id(t) for t in _sharing(targets) if t.worker not in set(workers)}
    results = digest_all(targets, shared)
    groups = rank_groups(results)
    detailed = _detailed(targets, groups, detail, workers)
    results = [(t, t.digest(), err) if id(t) in detailed and d is not None and not isinstance(d, Digest)
               else (t, d, err) for t, d, err in results]
    return results, groups, detailed


def _sharing(targets) -> list:
    """The targets at a window position that several workers of their run have (Store.windows_at)."""
    store = targets[0].store
    shared = set()
    for run in {t.run for t in targets}:
        position = 0
        while chosen := store.windows_at(run, position):
            if len(chosen) > 1:
                shared.update((run, worker.name, window.id) for worker, window in chosen)
            position += 1
    return [t for t in targets if (t.run, t.worker, t.window.id) in shared]


def rank_groups(results) -> list[tuple[str, int, list]]:
    """(run, window position, [(target, digest)]) for each window position that several ranks of a run
    share (Store.windows_at: the windows the plugin's /cluster compares too)."""
    found = {(t.run, t.worker, t.window.id): (t, d) for t, d, _ in results if d is not None}
    store = results[0][0].store
    groups = []
    for run in sorted({t.run for t, _, _ in results}):
        position = 0
        while chosen := store.windows_at(run, position):
            members = [found[key] for key in ((run, w.name, win.id) for w, win in chosen) if key in found]
            if len({d.window.rank for _, d in members}) > 1:
                groups.append((run, position, members))
            position += 1
    return groups


def _detailed(targets, groups, detail: bool = False, workers=()) -> set:
    """The windows whose whole report is wanted: --detail, the --worker ones, and those of no rank group
    (a lone window has nothing to sum up across ranks: its own report is the report)."""
    grouped = {id(target) for _, _, members in groups for target, _ in members}
    return {id(t) for t in targets if detail or t.worker in set(workers) or id(t) not in grouped}


def _analyses(groups) -> list[tuple]:
    """(run, position, members, analyse_ranks of the members) of each rank group."""
    from canning_tb.analysis.cluster import analyse_ranks
    return [(run, position, members, analyse_ranks([d for _, d in members])) for run, position, members in groups]


def json_report(source: str, results, analyses, detailed: set) -> dict:
    """The `--format=json` report (docs/cli-json.md): the ranks across each other, then each window with
    its headline `figures` and `communication` figures (analysis/summary.py, the views' own functions),
    and its whole digest when it is in `detailed`."""
    from canning_tb.analysis.communication.wait_transfer import own_figures
    from canning_tb.analysis.efficiency.summary import roofline_figures
    from canning_tb.analysis.summary import communication_figures, window_figures
    read = [d for _, d, _ in results if d is not None]
    own = dict(zip(map(id, read), own_figures(read)))  # every window's own wait / transfer in one pass
    return {"schema": VIEW_SCHEMA, "input": source,
            "ranks": [_ranks_json(run, i, members, analysis) for run, i, members, analysis in analyses],
            "windows": [{"run": t.run, "worker": t.worker, "window": t.window.id, "label": t.window.label,
                         "format": t.window.format, "trigger": t.window.trigger or None, "error": err,
                         "figures": window_figures(d) if d is not None else None,
                         "communication": communication_figures(d, found=own[id(d)]) if d is not None else None,
                         "roofline": roofline_figures(d) if d is not None else None,
                         "coverage": to_plain(d.coverage) if d is not None else None,
                         "findings": _window_findings(d),
                         "memory_snapshots": _snapshots_json(t),
                         "digest": to_plain(d) if d is not None and id(t) in detailed else None}
                        for t, d, err in results]}


def _snapshots(target, limit: int):
    """The window's memory snapshots explained (queries/memory_snapshot.py): a summary, or {"error"} each."""
    from canning_tb.queries.errors import QueryError
    from canning_tb.queries.memory_snapshot import snapshot_impl
    out = []
    for i in range(len(target.window.snapshots)):
        try:
            out.append(snapshot_impl(target.store, target.run, target.worker, target.window.id, i, limit))
        except QueryError as e:
            out.append({"error": scrub_paths(str(e), target.store.logdir)})
    return out


def _snapshots_json(target) -> list | None:
    return _snapshots(target, 10) if target.window.snapshots else None


def _window_findings(digest) -> list | None:
    """The window's own findings, ranked (its digest's rule_hits, read in part too); None when unread."""
    from canning_tb.analysis.rules.text import findings_json
    return None if digest is None else findings_json(digest.rule_hits)


def _ranks_json(run: str, position: int, members: list, analysis: dict) -> dict:
    """The cross-rank analysis of one window position and its findings (analysis/rules)."""
    from canning_tb.analysis.rules import cluster_hits
    from canning_tb.analysis.rules.text import findings_json
    return {"run": run, "window_index": position, "analysis": analysis,
            "findings": findings_json(cluster_hits(analysis, [d for _, d in members]))}


def _findings_line(target, digest) -> str:
    """A rank window's own findings in short, in their order (the whole report: --detail)."""
    from canning_tb.analysis.rules.finding import rank_key
    hits = sorted((h for h in digest.rule_hits if not h.needs), key=rank_key)
    if not hits:
        return f"\n{target.title}: no finding.\n"
    rows = [f"  {i}. [{h.severity}] {h.title} (gain: {h.gain})" for i, h in enumerate(hits, 1)]
    return f"\n{target.title}: its own findings\n" + "\n".join(rows) + "\n"


def write_report(path: str, cache_dir: str | None = None, follow_links: bool = False) -> str:
    """Writes the JSON report of every window under `path` to `path`/performance.json (atomically);
    returns the file's path."""
    results, groups, detailed = read_all(targets_for(path, cache_dir, follow_links=follow_links))
    out = os.path.join(path, "performance.json")
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        dump_json(json_report(path, results, _analyses(groups), detailed), f)
    os.replace(out + ".tmp", out)
    return out


def view(args) -> int:
    targets = targets_for(args.input, args.cache_dir, getattr(args, "chip", None), args.follow_links)
    results, groups, detailed = read_all(targets, args.detail, args.worker or ())
    analyses = _analyses(groups)
    if args.format == "json":
        dump_json(json_report(args.input, results, analyses, detailed))
    else:
        _text_report(args, results, analyses, detailed)
    return 0 if any(d is not None for _, d, _ in results) else 1


def _text_report(args, results, analyses, detailed: set) -> None:
    from canning_tb.analysis import report
    from canning_tb.analysis.efficiency.summary import roofline_lines
    from canning_tb.analysis.memory_snapshot.text import snapshot_text
    out = sys.stdout
    for run, position, members, analysis in analyses:
        where = "" if run == "." else f"{run} / "
        out.write(f"\n=== {where}window {position + 1}: across {len(members)} ranks ===\n"
                  + report.ranks_report([d for _, d in members], top=args.top, analysis=analysis) + "\n")
    hidden = 0
    for target, digest, err in results:
        if id(target) not in detailed and not err:
            hidden += 1
            out.write(_findings_line(target, digest))
            continue
        out.write(f"\n=== {target.title} [{target.window.format}] ===\n")
        if target.window.trigger:
            out.write(f"triggered by the job: {target.window.trigger}\n")
        if err:
            out.write(f"error: {err}\n")
            continue
        if target.window.format != "snapshot":
            out.write(report.window_report(digest, top=args.top) + "\n")
            out.write("\n" + roofline_lines(digest) + "\n")
        for snap in _snapshots(target, args.top) if target.window.snapshots else ():
            out.write("\n" + (f"memory snapshot: {snap['error']}" if "error" in snap else snapshot_text(snap, args.top))
                      + "\n")
    if hidden:
        out.write(f"\n({hidden} windows of ranks summed up above; each one's report: --detail, or --worker=NAME)\n")
