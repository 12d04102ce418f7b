"""Compute a window's digest at the source: run by the handler in a background process.

`python -m canning_tb.store.source_digest <manifest>` writes `<worker>.<window>.digest.pb`
beside the manifest (atomically), so the plugin only has to read it.
"""
from __future__ import annotations

import logging
import os
import sys

from .cache import write_atomic
from .discover import scan_folder
from .store import SOURCE_DIGEST_SUFFIX, digest_of


def write_digest(manifest_path: str) -> str:
    folder, name = os.path.split(os.path.abspath(manifest_path))
    for worker, windows in scan_folder(folder, [], [name] + os.listdir(folder)).items():
        for w in windows:
            if w.path == os.path.join(folder, name):
                d = digest_of(w, worker)
                out = w.path[: -len(".canning.json")] + SOURCE_DIGEST_SUFFIX
                write_atomic(out, d.SerializeToString())
                return out
    raise FileNotFoundError(f"{manifest_path}: not a canning window manifest")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    status = 0
    for path in args:
        try:
            write_digest(path)
        except Exception as e:  # the training job must never see this fail
            logging.warning("canning: digest of %s not written: %s", path, e)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
