"""logdir -> runs -> workers (ranks) -> windows; digests cached beside the data."""
from .discover import Run, Window, Worker, discover
from .store import Store, digest_of, read_window

__all__ = ["Run", "Window", "Worker", "Store", "discover", "digest_of", "read_window"]
