"""The allocator's memory snapshots (`torch.cuda.memory._dump_snapshot()`, `torch_npu.npu.memory._snapshot()`
pickled): a fourth input format, read into numpy columns (`model.Snapshot`), never into an EventTable.

`unpickle.py` loads the pickle with an unpickler that refuses every global (a snapshot is plain data: dicts,
lists, str, int, bool, tuples), within the size cap and read deadline of every other reader; `read.py` turns the
plain data into columns; `sniff.py` tells a snapshot from its first bytes (discovery: no numpy).
"""
__all__ = ["read_snapshot", "Snapshot", "ACTIONS", "STATES"]


def __getattr__(name: str):
    if name == "read_snapshot":
        from .read import read_snapshot
        return read_snapshot
    if name in ("Snapshot", "ACTIONS", "STATES"):
        from . import model
        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
