"""--mode=view: the report of every window under a path, as text or JSON."""
from __future__ import annotations

import sys

from canning_tb.digest_json import to_plain
from canning_tb.ingest.table import InputError

from .main import JSON_SCHEMA, dump_json
from .progress import ProgressBar
from .targets import targets_for


def digest_all(targets) -> list[tuple]:
    """(target, digest or None, error or None) for each target, digesting in parallel."""
    store = targets[0].store
    if len(targets) > 1:
        store.prefetch([(t.run, t.worker, t.window.id) for t in targets], progress=ProgressBar("windows"))
    out = []
    for t in targets:
        try:
            out.append((t, t.digest(), None))
        except InputError as e:
            out.append((t, None, str(e)))
    return out


def view(args) -> int:
    results = digest_all(targets_for(args.input, args.cache_dir))
    if args.format == "json":
        dump_json({"schema": JSON_SCHEMA, "input": args.input, "windows": [
            {"run": t.run, "worker": t.worker, "window": t.window.id, "label": t.window.label,
             "format": t.window.format, "error": err, "digest": to_plain(d) if d is not None else None}
            for t, d, err in results]})
    else:
        from canning_tb.analysis import report
        out = sys.stdout
        for t, d, err in results:
            out.write(f"\n=== {t.title} [{t.window.format}] ===\n")
            if err:
                out.write(f"error: {err}\n")
                continue
            out.write(report.window_report(d, top=args.top) + "\n")
        ok = [d for _, d, _ in results if d is not None]
        if len(ok) > 1 and hasattr(report, "ranks_report"):
            out.write("\n=== across ranks ===\n" + report.ranks_report(ok) + "\n")
    return 0 if any(d is not None for _, d, _ in results) else 1
