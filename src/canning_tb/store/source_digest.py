"""The one background-digest entry point: `python -m canning_tb.store.source_digest <manifest>...`.

The handler (digest=True) starts it after each window, apart from the training process, which never
waits for it: it writes the window's digest beside the manifest (canning_tb.manifest.digest_path),
atomically, so the viewer only has to read it. On failure it logs one line per window and exits 0:
the viewer computes the digest on first open instead.
"""
from __future__ import annotations

import logging
import os
import sys

from canning_tb.manifest import digest_path

from .cache import write_atomic
from .discover import scan_folder
from .store import digest_of


def write_digest(manifest_path: str) -> str:
    folder, name = os.path.split(os.path.abspath(manifest_path))
    for worker, windows in scan_folder(folder, [], [name]).items():
        for w in windows:
            if w.path == os.path.join(folder, name):
                d = digest_of(w, worker)
                out = digest_path(w.path)
                write_atomic(out, d.SerializeToString())
                return out
    raise FileNotFoundError(f"{manifest_path}: not a canning window manifest")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.WARNING, format="canning digest: %(message)s")
    if not args:
        logging.warning("usage: python -m canning_tb.store.source_digest <manifest.canning.json>...")
    for path in args:
        try:
            write_digest(path)
        except Exception as e:  # process boundary: the digest can be built later by the viewer
            logging.warning("no digest for %s (%s: %s); the viewer will compute it on first open", path,
                            type(e).__name__, e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
