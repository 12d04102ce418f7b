"""Matrix multiplications: FLOPs = 2 x batch x M x N x K (a multiply and an add per term), bytes =
the operands read once and the result written once (docs/efficiency.md#matmul).

Operators (torch's shapes): mm, addmm, _addmm_activation, bmm, baddbmm, matmul, linear, mv, addmv,
_scaled_mm. NPU kernels (CANN's shapes, which say M, N, K without the transpose attributes, because
the output gives M and N and each operand holds M x K, K x N elements): MatMul, MatMulV2, MatMulV3,
BatchMatMul*, GroupedMatmul. A shape that does not fit (K not matching) is not modelled.
"""
from __future__ import annotations

import math

from . import dtypes
from .inputs import OpInputs, Shape
from .work import Work, inputs_bytes, out_bytes, total

MODEL = "matmul"


def _work(x: OpInputs, batch: int, m: int, n: int, k: int, operands, a: int = 0, dtype: str = "") -> Work:
    """The Work of batch x (M x K) @ (K x N), reading `operands` (input indexes), the result in the
    dtype of input `a`."""
    flops = 2.0 * batch * m * n * k
    out_dtype = dtype or x.dtype(a)
    moved = total([inputs_bytes(x, operands), out_bytes((batch, m, n), out_dtype)])
    return Work(flops, moved, dtypes.peak_class(x.dtype(a)), MODEL, matrix=True)


def _two_d(s: Shape | None) -> bool:
    return s is not None and len(s) == 2


def mm(x: OpInputs, a: int = 0, b: int = 1, extra=()) -> Work | None:
    """mm(A[M, K], B[K, N]); `extra`: more inputs read (addmm's self)."""
    sa, sb = x.shape(a), x.shape(b)
    if not (_two_d(sa) and _two_d(sb)) or sa[1] != sb[0]:
        return None
    return _work(x, 1, sa[0], sb[1], sa[1], (a, b, *extra), a)


def addmm(x: OpInputs) -> Work | None:
    """addmm(self, mat1[M, K], mat2[K, N]): the matmul, self read too (its add not counted)."""
    return mm(x, 1, 2, extra=(0,))


def bmm(x: OpInputs, a: int = 0, b: int = 1, extra=()) -> Work | None:
    """bmm(A[b, M, K], B[b, K, N])."""
    sa, sb = x.shape(a), x.shape(b)
    if sa is None or sb is None or len(sa) != 3 or len(sb) != 3 or sa[0] != sb[0] or sa[2] != sb[1]:
        return None
    return _work(x, sa[0], sa[1], sb[2], sa[2], (a, b, *extra), a)


def baddbmm(x: OpInputs) -> Work | None:
    return bmm(x, 1, 2, extra=(0,))


def _broadcast(a: Shape, b: Shape) -> Shape | None:
    """numpy broadcasting of two batch shapes; None when they do not broadcast."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        da, db = (a[-i] if i <= len(a) else 1), (b[-i] if i <= len(b) else 1)
        if da != db and 1 not in (da, db):
            return None
        out.append(max(da, db))
    return tuple(reversed(out))


def matmul(x: OpInputs) -> Work | None:
    """matmul(A, B) with torch's rules: a 1-D operand is a vector (M or N = 1), batch dims broadcast."""
    sa, sb = x.shape(0), x.shape(1)
    if not sa or not sb:
        return None
    m, k = (1, sa[0]) if len(sa) == 1 else sa[-2:]
    k2, n = (sb[0], 1) if len(sb) == 1 else sb[-2:]
    batch = _broadcast(sa[:-2], sb[:-2])
    if k != k2 or batch is None:
        return None
    return _work(x, math.prod(batch), m, n, k, (0, 1))


def linear(x: OpInputs) -> Work | None:
    """linear(input[..., K], weight[N, K], bias[N]?): M = the product of input's leading dims."""
    si, sw = x.shape(0), x.shape(1)
    if not si or not _two_d(sw) or si[-1] != sw[1]:
        return None
    return _work(x, 1, math.prod(si[:-1]), sw[0], sw[1], (0, 1, 2))


def mv(x: OpInputs, a: int = 0, v: int = 1, extra=()) -> Work | None:
    """mv(A[M, K], v[K])."""
    sa, sv = x.shape(a), x.shape(v)
    if not _two_d(sa) or sv is None or len(sv) != 1 or sa[1] != sv[0]:
        return None
    return _work(x, 1, sa[0], 1, sa[1], (a, v, *extra), a)


def addmv(x: OpInputs) -> Work | None:
    return mv(x, 1, 2, extra=(0,))


def scaled_mm(x: OpInputs) -> Work | None:
    """_scaled_mm(A[M, K], B[K, N], scale_a, scale_b, ...): FP8 GEMM; the result's dtype is not
    recorded, so its bytes are not modelled."""
    w = mm(x, 0, 1)
    return None if w is None else Work(w.flops, None, w.dtype, MODEL, matrix=True)


OPERATORS = {
    "aten::mm": mm, "aten::addmm": addmm, "aten::addmm_": addmm, "aten::_addmm_activation": addmm,
    "aten::bmm": bmm, "aten::baddbmm": baddbmm, "aten::baddbmm_": baddbmm, "aten::matmul": matmul,
    "aten::linear": linear, "aten::mv": mv, "aten::addmv": addmv, "aten::addmv_": addmv,
    "aten::_scaled_mm": scaled_mm,
}


# -- NPU kernels ------------------------------------------------------------------------------
def nd(shape: Shape | None, fmt: str) -> Shape | None:
    """A FRACTAL_NZ shape [..., N1, M1, M0, N0] as the matrix it holds [..., M1 x M0, N1 x N0]
    (padded to the fractal); other formats as they are."""
    if shape is not None and "FRACTAL_NZ" in fmt.upper() and len(shape) >= 4:
        *lead, n1, m1, m0, n0 = shape
        return (*lead, m1 * m0, n1 * n0)
    return shape


def _k_of(s: Shape, rows: int) -> int | None:
    """K of an operand holding rows x K elements in its last two dims (in either order)."""
    if rows <= 0 or (s[-1] * s[-2]) % rows:
        return None
    k = s[-1] * s[-2] // rows
    return k if k in (s[-1], s[-2]) else None


def _at(values: tuple, i: int) -> str:
    return values[i] if i < len(values) else ""


def npu_matmul(x: OpInputs) -> Work | None:
    """MatMul*, BatchMatMul*: out[..., M, N]; K from each operand (they must agree); the operands'
    batch dims broadcast to the output's."""
    out = nd(x.out_shapes[0], _at(x.out_formats, 0)) if x.out_shapes else None
    sa, sb = nd(x.shape(0), _at(x.formats, 0)), nd(x.shape(1), _at(x.formats, 1))
    if not out or sa is None or sb is None or min(len(out), len(sa), len(sb)) < 2:
        return None
    m, n = out[-2], out[-1]
    k = _k_of(sa, m)
    batch = _broadcast(sa[:-2], sb[:-2])
    if k is None or k != _k_of(sb, n) or batch is None or _broadcast(batch, out[:-2]) != tuple(out[:-2]):
        return None
    moved = total([inputs_bytes(x, range(len(x.shapes))), out_bytes(x.out_shapes[0], _at(x.out_types, 0))])
    return Work(2.0 * math.prod(out[:-2]) * m * n * k, moved, dtypes.peak_class(x.dtype(0)), MODEL, matrix=True)


def npu_grouped_matmul(x: OpInputs) -> Work | None:
    """GroupedMatmul with one x[M, K] and one y[M, N] (every row multiplied by its group's weight):
    2 x M x N x K, when some weight input ends in (K, N) or (N, K)."""
    sx = x.shape(0)
    if len(x.out_shapes) != 1 or not _two_d(sx) or not x.out_shapes[0] or len(x.out_shapes[0]) != 2:
        return None
    (m, k), (m2, n) = sx, x.out_shapes[0]
    weights = [s for s in x.shapes[1:] if s is not None and len(s) >= 2 and tuple(s[-2:]) in ((k, n), (n, k))]
    if m != m2 or not weights:
        return None
    moved = total([inputs_bytes(x, range(len(x.shapes))), out_bytes((m, n), _at(x.out_types, 0))])
    return Work(2.0 * m * n * k, moved, dtypes.peak_class(x.dtype(0)), MODEL, matrix=True)


KERNELS = {"MatMul": npu_matmul, "MatMulV2": npu_matmul, "MatMulV3": npu_matmul, "BatchMatMul": npu_matmul,
           "BatchMatMulV2": npu_matmul, "BatchMatMulV3": npu_matmul, "GroupedMatmul": npu_grouped_matmul}
