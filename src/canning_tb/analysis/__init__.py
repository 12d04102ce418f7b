"""Pure functions: EventTable -> Digest. Knows nothing of TensorBoard, HTTP or torch.

build_digest(table) -> Digest, analyse_ranks([Digest]) -> dict, and the text twins in `report` (op_summary, memory_summary, communication_summary, suggestions).
Names are imported on first use, so `import canning_tb.analysis.digest_pb2` stays light.
A digest as JSON: `canning_tb.util.digest_json.to_plain` (the one name for it).
"""
from importlib import import_module

_NAMES = {"build_digest": "build", "analyse_ranks": "cluster", "SCHEMA_VERSION": "digest"}
__all__ = sorted(_NAMES)


def __getattr__(name):
    mod = _NAMES.get(name)
    if mod is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{mod}", __name__), name)
