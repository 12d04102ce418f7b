"""One policy for what discovery may open under a logdir, applied to every file and folder it lists
(run folders, trace files, torch_npu folders, the files a manifest names):

- only regular files are ever opened: a FIFO, socket or device named like a trace would block a
  reader forever (or read without end), so it is not a window;
- symbolic links are followed (TensorBoard's users link runs into a logdir) as long as they resolve
  inside the logdir's real path; a link out of it is skipped, and said once in the log, unless the user
  allows it: `canning-prof --follow-links` (passed down as `follow_links`, never through the environment),
  or CANNING_FOLLOW_LINKS=1 in TensorBoard's environment.

This is what is listed. What is opened is checked again when it is opened (canning_tb/util/safe_files.py:
the real path of the opened descriptor, a regular file): a file swapped for a link after the listing
is refused there. `Policy(logdir, follow_links)` registers the logdir as a confinement root for those checks.
"""
from __future__ import annotations

import logging
import os
import stat

from canning_tb.util.safe_files import FOLLOW_ENV, confine, follows_links, is_inside

log = logging.getLogger("canning_tb.store")

__all__ = ["FOLLOW_ENV", "Policy", "walk"]
_said: set[tuple[str, str]] = set()


class Policy:
    def __init__(self, logdir: str, follow_links: bool = False):
        self.logdir = logdir
        self.root = os.path.realpath(logdir)
        self.refused: set[str] = set()  # paths refused in this scan: a refused folder is never walked into
        confine(logdir, follow_links)  # every later open of a file under it is checked at open time
        # this logdir's choice, else what the open-time check answers for its files (a folder of a logdir the user
        # let links out of, as scan_folder's own policy is, lets them out too)
        self.outside_ok = follow_links or follows_links(logdir)

    def inside(self, path: str) -> bool:
        """Whether path (after its links) is inside the logdir, or the user allows links out of it."""
        if self.outside_ok:
            return True
        return is_inside(os.path.realpath(path), self.root)  # safe_files' one rule: whole folders, not prefixes

    def usable(self, path: str, folder_ok: bool = False) -> bool:
        """A regular file (or a folder, where folder_ok) inside the logdir's real path; missing is usable
        (the reader says so)."""
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return not os.path.islink(path) or self.inside(path)
        if not (stat.S_ISREG(mode) or (folder_ok and stat.S_ISDIR(mode))):
            self.refuse(path, "not a regular file")
            return False
        if not self.inside(path):
            self.refuse(path, f"a link to outside the logdir (set {FOLLOW_ENV}=1 to follow it)")
            return False
        return True

    def refuse(self, path: str, why: str) -> None:
        self.refused.add(path)
        shown = os.path.relpath(path, self.logdir).replace(os.sep, "/")
        if (path, why) not in _said:  # once per process and file: the scan runs every few seconds
            _said.add((path, why))
            log.warning("canning: skipped %s: %s", shown, why)


def walk(logdir: str, policy: Policy):
    """os.walk, top-down, following links that the policy allows, each real folder once (link loops),
    listing only regular files; the caller may prune `dirs` in place."""
    seen: set[str] = set()
    stack = [logdir]
    while stack:
        folder = stack.pop()
        real = os.path.realpath(folder)
        if real in seen:
            continue
        seen.add(real)
        dirs, files = _entries(folder, policy)
        yield folder, dirs, files
        stack.extend(os.path.join(folder, d) for d in sorted(dirs, reverse=True))


def _entries(folder: str, policy: Policy) -> tuple[list[str], list[str]]:
    dirs, files = [], []
    try:
        with os.scandir(folder) as it:
            entries = list(it)
    except OSError as e:  # an unreadable run folder is said, not silently left out
        if folder != policy.logdir:
            policy.refuse(folder, f"cannot list it: {e.strerror or e}")
        return dirs, files
    for entry in entries:
        try:
            if entry.is_symlink() and not policy.inside(entry.path):
                if not entry.name.startswith("."):
                    policy.refuse(entry.path, f"a link to outside the logdir (set {FOLLOW_ENV}=1 to follow it)")
                continue
            if entry.is_dir():
                dirs.append(entry.name)
            elif entry.is_file():  # regular files only (after links): a FIFO or socket is never opened
                files.append(entry.name)
        except OSError:
            continue
    return sorted(dirs), sorted(files)
