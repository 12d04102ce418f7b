"""The one background-digest entry point: `python -m canning_tb.store.source_digest [--publish URL] <manifest>...`.

The handler (digest=True, the default) starts it after each window, apart from the training process,
which never waits for it; it runs at a low priority (nice), on one core and within a memory budget
(digest_budget.py), so the training's own processes come first.
It writes the window's digest beside the manifest (canning_tb.util.manifest.digest_path), atomically, so the
viewer only has to read it. With --publish URL (a remote run folder: the manifest is in the handler's
local staging folder), the digest is uploaded beside the window there, and the staged files are removed.
On failure it logs one line per window and exits 0: the viewer computes the digest on first open instead.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from canning_tb.util.manifest import digest_path

from . import digest_budget
from .batch import rename_files
from .cache import write_atomic
from .compute import digest_of
from .discover import scan_folder
from .heap import tune_this_process

NICENESS = 10


def write_digest(manifest_path: str, shown=None) -> str:
    """Digest a window beside its manifest; shown(path) renames the files the digest names."""
    folder, name = os.path.split(os.path.abspath(manifest_path))
    for worker, windows in scan_folder(folder, [], [name]).items():
        for w in windows:
            if w.path == os.path.join(folder, name):
                d = digest_of(w, worker)
                if shown is not None:
                    rename_files(d, shown)
                out = digest_path(w.path)
                write_atomic(out, d.SerializeToString())
                return out
    raise FileNotFoundError(f"{manifest_path}: not a canning window manifest")


def publish_digest(manifest_path: str, url: str) -> None:
    """Digest a staged window, upload the digest into the remote run folder, remove the staged files."""
    from canning_tb.util import remote_fs
    from canning_tb.util.manifest import load as load_manifest
    folder = os.path.dirname(os.path.abspath(manifest_path))
    try:  # the digest names the bucket's files, not the staged copies
        out = write_digest(manifest_path, lambda path: remote_fs.join(url, os.path.basename(path))
                           if os.path.dirname(path) == folder else path)
        fs, root = remote_fs.open_fs(url)
        remote_fs.call(url, remote_fs.put_atomic, fs, out, f"{root}/{os.path.basename(out)}")
        os.remove(out)
    finally:
        man = load_manifest(manifest_path)
        remote_fs.remove_local(folder, [f.name for f in man.files] + [man.manifest])


def _lower_priority() -> None:
    try:
        os.nice(NICENESS)
    except (AttributeError, OSError):  # not on this platform: the process still runs apart from training
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m canning_tb.store.source_digest")
    parser.add_argument("--publish", default=None, metavar="URL", help="upload the digest into this remote run folder")
    parser.add_argument("manifests", nargs="*")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.WARNING, format="canning digest: %(message)s")
    _lower_priority()
    if argv is None:  # the background process itself: one core, a memory budget (digest_budget.py)
        digest_budget.apply(args.manifests)
        tune_this_process()  # it exits after these windows (heap.py)
    if not args.manifests:
        logging.warning("usage: python -m canning_tb.store.source_digest [--publish URL] <manifest.canning.json>...")
    for path in args.manifests:
        try:
            if args.publish:
                publish_digest(path, args.publish)
            else:
                write_digest(path)
        except Exception as e:  # process boundary: the digest can be built later by the viewer
            logging.warning("no digest for %s (%s: %s); the viewer will compute it on first open", path,
                            type(e).__name__, e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
