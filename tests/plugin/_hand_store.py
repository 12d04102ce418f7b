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


class RunStore(HandStore):
    """One run's workers in order, each with its windows (`layout`: {worker: (rank, [window ids])}); the digests
    by (run, worker, window); `key` names each window's identity (change it to say its files changed); every
    digest read is counted in `reads` with the fields asked."""

    def __init__(self, logdir, run: str, layout: dict, digests: dict):
        super().__init__(logdir, digests)
        self.run, self.layout, self.key, self.reads = run, layout, {}, []

    def runs(self):
        return [self.run]

    def windows_at(self, run, position):
        if run != self.run:  # as Store's: an unknown run is a KeyError
            raise KeyError(run)
        return [(SimpleNamespace(name=w, rank=rank), SimpleNamespace(id=ids[position], run=run))
                for w, (rank, ids) in self.layout.items() if 0 <= position < len(ids)]

    def position(self, run, worker, window):
        ids = self.layout[worker][1] if run == self.run and worker in self.layout else []
        if window not in ids:
            raise KeyError(window)
        return ids.index(window)

    def digest_key(self, run, window):
        if run != window.run:  # Store's key is the run's and the window's
            raise KeyError(run)
        return self.key.get(window.id, "k0")

    def digest_part(self, run, worker, window, fields):
        self.reads.append((run, worker, window, fields))
        return self.digests[(run, worker, window)]


class Ready:
    """A prefetcher whose windows are all digested (or, with `pending`, still being digested)."""

    def __init__(self, pending=None):
        self.pending, self.asked = pending, []

    def progress(self, key, items):
        self.asked.append((key, items))
        return self.pending
