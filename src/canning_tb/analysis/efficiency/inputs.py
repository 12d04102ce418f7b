"""An operator's or kernel's inputs as the models read them: shapes, dtypes, concrete values, and for
NPU kernels their CANN type, formats and outputs (ingest/op_args.py). Parsed once per distinct
(name, shapes, args) of a window."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache

from ...ingest import op_args
from . import dtypes

Shape = tuple[int, ...]


@dataclass(frozen=True)
class OpInputs:
    name: str
    shapes: tuple  # per input: a Shape, or None (a list of shapes, a non-integer text, absent)
    lists: tuple = ()  # per input: its shapes when it is a list of tensors (TensorList), else None
    types: tuple = ()  # per input: its dtype name ("" unknown)
    concrete: tuple = ()  # per input: the value as text ("" none)
    op_type: str = ""  # NPU kernels: the CANN operator type
    formats: tuple = ()
    out_shapes: tuple = ()
    out_types: tuple = ()
    out_formats: tuple = ()

    def shape(self, i: int) -> Shape | None:
        return self.shapes[i] if 0 <= i < len(self.shapes) else None

    def dtype(self, i: int) -> str:
        return self.types[i] if 0 <= i < len(self.types) else ""

    def value(self, i: int) -> str:
        return self.concrete[i] if 0 <= i < len(self.concrete) else ""

    def tensor(self, i: int) -> bool:
        """Input i is a tensor: its dtype says so, or (no dtypes recorded) it has a non-empty shape."""
        if i < len(self.types):
            return dtypes.is_tensor_type(self.types[i]) and self.shape(i) is not None
        return bool(self.shape(i))

    def tensor_bytes(self, i: int) -> float | None:
        """numel x element size of input i; None when its shape or dtype is unknown."""
        return tensor_bytes(self.shape(i), self.dtype(i))


def numel(shape: Shape | None) -> int | None:
    return None if shape is None else math.prod(shape)


def tensor_bytes(shape: Shape | None, dtype: str) -> float | None:
    n, s = numel(shape), dtypes.size(dtype)
    return None if n is None or s is None else float(n * s)


def _is_shape(x) -> bool:
    return isinstance(x, list) and all(type(d) is int for d in x)


def _tensor_lists(value) -> tuple:
    if not isinstance(value, list):
        return ()
    return tuple(tuple(tuple(s) for s in x) if isinstance(x, list) and x and all(_is_shape(s) for s in x)
                 and any(s for s in x) and not _is_shape(x) else None for x in value)


def _shape_list(value) -> tuple:
    if not isinstance(value, list):
        return ()
    return tuple(tuple(x) if isinstance(x, list) and all(type(d) is int for d in x) else None for x in value)


@lru_cache(maxsize=65536)
def parse(name: str, shapes_text: str | None, args_text: str | None) -> OpInputs:
    """The inputs of one (name, shapes column text, args column text)."""
    try:
        raw = json.loads(shapes_text) if shapes_text else None
    except ValueError:
        raw = None
    shapes, lists = _shape_list(raw), _tensor_lists(raw)
    a = op_args.decode(args_text)
    text = lambda key: tuple(str(x) if x is not None else "" for x in (a.get(key) or ()))  # noqa: E731
    return OpInputs(name=name, shapes=shapes, lists=lists, types=text("types"), concrete=text("concrete"),
                    op_type=str(a.get("op_type") or ""), formats=text("formats"),
                    out_shapes=_shape_list(a.get("out_shapes")), out_types=text("out_types"),
                    out_formats=text("out_formats"))


def int_list(text: str) -> list[int] | None:
    """A concrete input '[2, 2]' / '2' -> [2, 2] / [2]; None when it is no list of integers."""
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    if type(value) is int:
        return [value]
    if isinstance(value, list) and all(type(x) is int for x in value):
        return value
    return None


def bool_list(text: str) -> list[bool] | None:
    """'[False, True, True]' (torch's repr of a bool list) -> [False, True, True]; None otherwise."""
    t = (text or "").strip()
    if not (t.startswith("[") and t.endswith("]")):
        return None
    items = [flag(x) for x in t[1:-1].split(",") if x.strip()]
    return None if any(x is None for x in items) else items  # type: ignore[return-value]


def flag(text: str) -> bool | None:
    """A concrete boolean 'True' / 'False' (also 1 / 0); None when not recorded."""
    t = (text or "").strip().lower()
    return True if t in ("true", "1") else False if t in ("false", "0") else None
