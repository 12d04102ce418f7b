"""Turn a --input PATH (trace file, *_ascend_pt folder, run folder or logdir) into windows."""
from __future__ import annotations

import os
from functools import partial

from canning_tb.store import Store, Window
from canning_tb.util.remote_fs import is_url

from .output import is_report


class Target:
    """One window to report on, with the store that can digest it."""

    def __init__(self, store: Store, run: str, worker: str, window: Window):
        self.store, self.run, self.worker, self.window = store, run, worker, window

    @property
    def title(self) -> str:
        run = "" if self.run == "." else f"{self.run} / "
        return f"{run}{self.worker} / {self.window.label}"

    def digest(self):
        return self.store.digest(self.run, self.worker, self.window.id)

    def part(self):
        """The fields of the digest that the report across ranks reads (store/digest_part.py)."""
        from canning_tb.store.digest_part import RANKS
        return self.store.digest_part(self.run, self.worker, self.window.id, RANKS)


def _all_targets(store: Store, none_found: str) -> list[Target]:
    """Every window of the store; raises FileNotFoundError(none_found) when there is none."""
    out = [Target(store, run, wk.name, w) for run in store.runs() for wk in store.workers(run)
           for w in store.windows(run, wk.name)]
    if not out:
        raise FileNotFoundError(none_found)
    return out


def targets_for(path: str, cache_dir: str | None = None, chip: str | None = None,
                follow_links: bool = False) -> list[Target]:
    """Every window PATH holds; raises FileNotFoundError when it holds none (RemoteError when a
    remote PATH cannot be read); `chip`: the chip whose peaks the figures are judged against (--chip);
    `follow_links`: links out of PATH are read (--follow-links)."""
    store_of = partial(Store, cache_dir=cache_dir, chip=chip, follow_links=follow_links)  # each store of the command's
    if is_url(path):
        return _all_targets(store_of(path), f"{path}: no profiles found")
    given, path = path, os.path.abspath(path)  # messages name the path as given, never its absolute form
    if not os.path.exists(path):
        raise FileNotFoundError(f"{given}: no such file or folder")
    if os.path.isfile(path) and is_report(path):
        # performance.json (or a saved --format=json report): the windows of the folder it sits in
        path = os.path.dirname(path)
    if os.path.isfile(path) or path.rstrip("/").endswith(("_ascend_pt", "_ascend_ms")):
        # a single window: discovery of its parent folder classifies it; keep only that one
        parent = os.path.dirname(path.rstrip("/"))
        store = store_of(parent, recursive=False, select=lambda w: path in (w.path, *w.files))
        return _all_targets(store, f"{given}: not a profile (expected *.pt.trace.json[.gz], *.canning.json, "
                                   "a Chrome trace .json[.gz] or a *_ascend_pt folder)")
    return _all_targets(store_of(path),
                        f"{given}: no profiles found (looked for *.canning.json, *.pt.trace.json[.gz], "
                        "Chrome trace .json[.gz] files and torch_npu output folders)")

