"""--mode=view: the report of every window under a path, as text or JSON."""
from __future__ import annotations

import logging
import os
import sys

from canning_tb.digest_json import to_plain
from canning_tb.ingest.table import InputError

from .output import JSON_SCHEMA, dump_json
from .progress import ProgressBar
from .targets import targets_for

log = logging.getLogger("canning_tb.cli")


def digest_all(targets) -> list[tuple]:
    """(target, digest or None, error or None) for each target, digesting in parallel."""
    store = targets[0].store
    if len(targets) > 1:
        store.prefetch([(t.run, t.worker, t.window.id) for t in targets], progress=ProgressBar("windows"))
    out = []
    for target in targets:
        try:
            out.append((target, target.digest(), None))
        except InputError as e:
            out.append((target, None, str(e)))
        except Exception as e:  # window boundary: a bug met in one window must not cost the others their report
            log.exception("canning: window %s failed", target.window.path)
            out.append((target, None, f"{target.window.path}: internal error ({type(e).__name__}: {e}); "
                                      f"the traceback is on stderr"))
    return out


def rank_groups(results) -> list[tuple[str, int, list]]:
    """(run, window position, digests) for each window position that several ranks of a run share
    (Store.windows_at: the windows the plugin's /cluster compares too)."""
    digests = {(t.run, t.worker, t.window.id): d for t, d, _ in results if d is not None}
    store = results[0][0].store
    groups = []
    for run in sorted({t.run for t, _, _ in results}):
        position = 0
        while chosen := store.windows_at(run, position):
            found = [digests[key] for key in ((run, w.name, win.id) for w, win in chosen) if key in digests]
            if len({d.window.rank for d in found}) > 1:
                groups.append((run, position, found))
            position += 1
    return groups


def json_report(source: str, results, groups) -> dict:
    """The `--format=json` report (docs/cli-json.md); each window with its headline `figures` and its
    `communication` figures (analysis/summary.py, the views' own functions)."""
    from canning_tb.analysis.cluster import analyse_ranks
    from canning_tb.analysis.summary import communication_figures, window_figures
    return {"schema": JSON_SCHEMA, "input": source, "windows": [
        {"run": t.run, "worker": t.worker, "window": t.window.id, "label": t.window.label,
         "format": t.window.format, "error": err, "digest": to_plain(d) if d is not None else None,
         "figures": window_figures(d) if d is not None else None,
         "communication": communication_figures(d) if d is not None else None}
        for t, d, err in results],
        "ranks": [{"run": run, "window_index": i, "analysis": analyse_ranks(ds)} for run, i, ds in groups]}


def write_report(path: str, cache_dir: str | None = None) -> str:
    """Writes the JSON report of every window under `path` to `path`/performance.json (atomically);
    returns the file's path."""
    results = digest_all(targets_for(path, cache_dir))
    out = os.path.join(path, "performance.json")
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        dump_json(json_report(path, results, rank_groups(results)), f)
    os.replace(out + ".tmp", out)
    return out


def view(args) -> int:
    results = digest_all(targets_for(args.input, args.cache_dir))
    groups = rank_groups(results)
    if args.format == "json":
        dump_json(json_report(args.input, results, groups))
    else:
        from canning_tb.analysis import report
        out = sys.stdout
        for target, digest, err in results:
            out.write(f"\n=== {target.title} [{target.window.format}] ===\n")
            if err:
                out.write(f"error: {err}\n")
                continue
            out.write(report.window_report(digest, top=args.top) + "\n")
        for run, position, digests in groups:
            where = "" if run == "." else f"{run} / "
            out.write(f"\n=== {where}window {position + 1}: across ranks ===\n" + report.ranks_report(digests) + "\n")
    return 0 if any(d is not None for _, d, _ in results) else 1
