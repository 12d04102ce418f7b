"""The `args` event column: what an operator or NPU kernel was given beside its input shapes, as the
FLOPs / bytes models (analysis/efficiency) read it. One compact JSON object per distinct value,
interned like every string column; only the keys the file gave:

- "types": the inputs' dtypes, one per input as the file names them ("float", "c10::BFloat16",
  "Scalar", "" for none; torch_npu kernels: "FLOAT16", "DT_BF16", "INT32" ...);
- "concrete": the inputs' values where the profiler recorded them (Kineto's "Concrete Inputs":
  "[2, 2]" for a stride list, "True", "" for a tensor);
- "op_type": an NPU kernel's CANN operator type ("MatMulV2", "FlashAttentionScore"), its name being
  the instance's ("aclnnMm_MatMulV2_MatMulV2", "Conv2D1");
- "formats": its inputs' memory formats ("ND", "FORMAT_ND", "NC1HWC0", "FRACTAL_NZ" ...);
- "out_shapes" / "out_types" / "out_formats": the same for its outputs.
"""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

KEYS = ("types", "concrete", "op_type", "formats", "out_shapes", "out_types", "out_formats")


def encode(**parts: Any) -> str | None:
    """The column's text for these parts (None / empty ones left out); None when nothing is left."""
    kept = {k: parts[k] for k in KEYS if parts.get(k) not in (None, "", [], ())}
    if not kept:
        return None
    return json.dumps(kept, separators=(",", ":"), ensure_ascii=False)


def json_object(text: str | None) -> dict:
    """A JSON object's text -> the dict; {} for none, bad JSON, or JSON that is no object."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@lru_cache(maxsize=65536)
def decode(text: str | None) -> dict:
    """The parts of one column value ({} for none or a value that is no JSON object)."""
    return json_object(text)


def split_list(cell: Any) -> list[str] | None:
    """'FLOAT;FLOAT;INT32' / 'float;\\r\\nScalar' (torch_npu's CSV and trace cells) -> their items;
    None for an empty or N/A cell."""
    if cell is None:
        return None
    text = str(cell).strip()
    if text in ("", "N/A"):
        return None
    return [part.strip().strip('"').strip() for part in text.split(";")]


def json_list(raw: bytes) -> list | None:
    """Kineto's arg (JSON text of a list) -> the list; None when absent or not a list."""
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, list) else None
