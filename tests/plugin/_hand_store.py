"""A store holding digests made by hand (issue 46: fast tests of queries/ under mutation): the few calls
queries/errors.window_digest and the selections make, nothing read from disk but the logdir's existence."""
from types import SimpleNamespace


class HandStore:
    """`digests`: {(run, worker, window): pb.Digest}; every window's path is the logdir (it exists)."""

    def __init__(self, logdir, digests: dict):
        self.logdir = str(logdir)
        self.digests = digests

    def window(self, run, worker, window):
        if (run, worker, window) not in self.digests:
            raise KeyError(window)
        return SimpleNamespace(id=window, run=run, path=self.logdir)

    def digest(self, run, worker, window):
        return self.digests[(run, worker, window)]
