"""logdir -> runs -> workers (ranks) -> windows (store.py, the catalog); their digests computed once
(compute.py) and cached in the user's cache folder (cache.py)."""
from .compute import digest_of, read_window
from .discover import Run, Window, Worker, discover
from .store import Store

__all__ = ["Run", "Window", "Worker", "Store", "discover", "digest_of", "read_window"]
