"""A one-line progress bar on stderr for long multi-window reads."""
from __future__ import annotations

import sys
import time


class ProgressBar:
    def __init__(self, what: str, stream=None, width: int = 30):
        self.what, self.stream, self.width = what, stream or sys.stderr, width
        self.started = time.monotonic()
        self.tty = getattr(self.stream, "isatty", lambda: False)()

    def __call__(self, done: int, total: int) -> None:
        if total <= 1:
            return
        filled = int(self.width * done / total)
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} {self.what} " \
               f"{time.monotonic() - self.started:5.1f}s"
        if self.tty:
            self.stream.write("\r" + line + ("\n" if done == total else ""))
        elif done in (0, total):  # logs: first and last line only
            self.stream.write(line + "\n")
        self.stream.flush()
