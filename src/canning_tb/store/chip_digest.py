"""Digests of a window for a chip someone chose (`--chip`, `?chip=`; analysis/efficiency/peaks.py).

Keyed by the chip, beside the window's own digest: `<window key>.chip-<hash of the chip>.digest.pb`
(the same window key, so the budget evicts them with it, and a changed file changes both). The
window's own digest stays the first view's (fast: cached, or made at the source); a chip's is made
once from the window's cached events (no second parse) and cached in its turn. Why not recompute
only the peak-dependent figures from the cached digest: MFU is summed over the matrix work units of
each step and module, which the digest does not keep, and the findings that judge against the roof
(below_roof) read the rows' shares; a second build from the events is exact and takes one view.
"""
from __future__ import annotations

import hashlib

from canning_tb.util.manifest import DIGEST_SUFFIX


def canonical(chip: str) -> str:
    """The table's name of a chip (UnknownChip, listing the known names, for any other)."""
    from canning_tb.analysis.efficiency.peaks import chip_name, chip_row
    return chip_name(chip_row(chip))


def chip_entry(key: str, path: str, chip: str) -> tuple[str, str]:
    """(memory key, cache file) of the window's digest for `chip` (a canonical name)."""
    tag = "chip-" + hashlib.sha1(chip.encode()).hexdigest()[:10]
    return f"{key}.{tag}", path[: -len(DIGEST_SUFFIX)] + f".{tag}{DIGEST_SUFFIX}"


def build_for_chip(table, worker: str, chip: str):
    """The digest of a window's events with `chip`'s peaks."""
    from canning_tb.analysis.build import build_digest
    digest = build_digest(table, chip=chip)
    if worker and not digest.window.worker:
        digest.window.worker = worker
    return digest


class ChipView:
    """A Store whose digests are those for one chip; everything else is the store's (the plugin
    makes one per request that names a chip, so the shared store keeps no per-request state)."""

    def __init__(self, store, chip: str):
        self._store, self.chip = store, canonical(chip)

    def digest(self, run: str, worker: str, window_id: str):
        return self._store.digest(run, worker, window_id, chip=self.chip)

    def digest_part(self, run: str, worker: str, window_id: str, fields: tuple):
        return self.digest(run, worker, window_id)

    def __getattr__(self, name: str):
        return getattr(self._store, name)
