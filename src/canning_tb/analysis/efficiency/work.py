"""What a model says of one call: its FLOPs, the bytes it must move at least, the dtype class its
peak is taken for, and whether it runs on the matrix units (Tensor Cores, the NPU cube)."""
from __future__ import annotations

from dataclasses import dataclass

from .inputs import OpInputs, numel, tensor_bytes


@dataclass(frozen=True)
class Work:
    flops: float | None  # None: the model gives bytes only
    bytes: float | None  # None: a size or dtype it needs is unknown
    dtype: str  # peak class ("fp32", "bf16" ...), "" none
    model: str  # the model's name (docs/efficiency.md): "matmul", "conv", "attention", "elementwise" ...
    matrix: bool = False  # matmul / convolution / attention: the matrix units' work, counted in MFU


def total(parts) -> float | None:
    """The sum of byte counts, None when any is unknown."""
    out = 0.0
    for p in parts:
        if p is None:
            return None
        out += p
    return out


def inputs_bytes(x: OpInputs, indexes) -> float | None:
    """Bytes of the tensor inputs at these indexes (absent optional inputs left out)."""
    return total(x.tensor_bytes(i) for i in indexes if x.tensor(i))


def out_bytes(shape, dtype: str) -> float | None:
    return tensor_bytes(tuple(shape), dtype) if shape is not None else None


def elements(shape) -> int:
    n = numel(tuple(shape) if shape is not None else None)
    return 0 if n is None else n
