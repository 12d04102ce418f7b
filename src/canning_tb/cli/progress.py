"""The progress bar of long multi-window reads (store.prefetch's `progress(done, total)`), drawn by tqdm
on stderr as `canning-prof digest`'s is: a bar on a terminal, a few plain lines in a log."""
from __future__ import annotations

import sys


class ProgressBar:
    """A `progress(done, total)` callback; nothing is drawn for a single window."""

    def __init__(self, what: str, stream=None):
        self.what, self.stream = what, stream or sys.stderr
        self._bar = None

    def __call__(self, done: int, total: int) -> None:
        if total <= 1:
            return
        if self._bar is None:
            from tqdm import tqdm
            tty = getattr(self.stream, "isatty", lambda: False)()
            self._bar = tqdm(total=total, unit="window", desc=self.what, file=self.stream, dynamic_ncols=True,
                             mininterval=0.1 if tty else 30.0)  # a log gets a line every 30 s, not one per window
        self._bar.update(done - self._bar.n)
        if done >= total:
            self._bar.close()
