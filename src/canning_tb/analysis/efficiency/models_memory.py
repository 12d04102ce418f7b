"""Memory-bound operators: bytes = every tensor read once plus every tensor written once; FLOPs a
small count per element, stated per family below (docs/efficiency.md#memory-bound-operators).

- elementwise: the output has the inputs' broadcast shape (in place: the first input is written);
  1 FLOP per output element, 3 for the fused ones (addcmul, addcdiv, lerp), 0 for selections and
  fills (where, masked_fill, fill_, zero_);
- copies (copy_, clone, contiguous, _to_copy): read and write, 0 FLOPs;
- reductions: the input read and the (smaller) output written, 1 FLOP per input element; the
  reduced dims must be recorded (Concrete Inputs) unless the call reduces everything;
- softmax / log_softmax: 5 FLOPs per element forward (max, subtract, exp, sum, divide or log),
  4 backward;
- norms: layer / group / batch norm 7 FLOPs per element (mean, subtract, square, sum, scale by
  rstd, weight, bias), RMS norm 4; backward passes: bytes only;
- embedding: the indices and the gathered rows read, the rows written; 0 FLOPs.
Lists of tensors (the _foreach_* optimizer steps) carry no dtype in Kineto's traces: not modelled
there; on the NPU their kernels (ForeachAddList ...) are, by `npu_tensors`.
"""
from __future__ import annotations

import math

from . import dtypes
from .inputs import OpInputs, Shape, flag, int_list
from .work import Work, elements, inputs_bytes, out_bytes, total

_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not",
            "isnan", "isinf", "isfinite"}
_SELECT = {"where", "masked_fill", "masked_fill_"}
_FUSED3 = {"addcmul", "addcmul_", "addcdiv", "addcdiv_", "lerp", "lerp_"}
_ELEMENTWISE = {
    "add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "pow", "pow_", "maximum", "minimum",
    "fmax", "fmin", "remainder", "fmod", "atan2", "hypot", "copysign", "xlogy", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "relu", "relu_", "gelu", "gelu_", "silu", "silu_", "sigmoid", "sigmoid_",
    "tanh", "tanh_", "exp", "exp_", "exp2", "expm1", "log", "log_", "log1p", "log2", "sqrt", "sqrt_", "rsqrt",
    "rsqrt_", "neg", "neg_", "abs", "abs_", "sin", "cos", "erf", "reciprocal", "reciprocal_", "square",
    "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "elu", "elu_", "softplus", "mish", "hardswish",
    "hardsigmoid", "threshold", "threshold_", "clamp", "clamp_", "clamp_min", "clamp_min_", "clamp_max",
    "clamp_max_", "sign", "floor", "ceil", "round", "trunc", "nan_to_num", "threshold_backward", "gelu_backward",
    "silu_backward", "sigmoid_backward", "tanh_backward", "hardtanh_backward", "leaky_relu_backward",
    "elu_backward", "softplus_backward", "mish_backward", "hardswish_backward",
} | _COMPARE | _SELECT | _FUSED3


def _broadcast_all(shapes: list[Shape]) -> Shape | None:
    out: list[int] = []
    for s in shapes:
        for i in range(1, len(s) + 1):
            d = s[-i]
            if i > len(out):
                out.insert(0, d)
            elif out[-i] != d and 1 not in (out[-i], d):
                return None
            elif out[-i] == 1:
                out[-i] = d
    return tuple(out)


def _result_dtype(x: OpInputs, tensors: list[int]) -> str:
    """The first floating input's dtype, else the first input's (torch's promotion, for the cases
    whose inputs share a dtype or mix a tensor with a 0-dim one)."""
    for i in tensors:
        if dtypes.peak_class(x.dtype(i)):
            return x.dtype(i)
    return x.dtype(tensors[0]) if tensors else ""


def elementwise(x: OpInputs) -> Work | None:
    base = x.name.split("::")[-1]
    tensors = [i for i in range(len(x.shapes)) if x.tensor(i)]
    if not tensors or any(x.shape(i) is None for i in tensors):
        return None
    out = _broadcast_all([x.shape(i) for i in tensors])
    if out is None:
        return None
    out_dtype = "bool" if base in _COMPARE else _result_dtype(x, tensors)
    per = 0 if base in _SELECT else 3 if base in _FUSED3 else 1
    n = elements(out)
    moved = total([inputs_bytes(x, tensors), out_bytes(out, out_dtype)])
    return Work(float(per * n), moved, dtypes.peak_class(_result_dtype(x, tensors)), "elementwise")


def fill(x: OpInputs) -> Work | None:
    """fill_ / zero_: the tensor written, nothing computed."""
    return Work(0.0, x.tensor_bytes(0), dtypes.peak_class(x.dtype(0)), "elementwise") if x.tensor(0) else None


def copy_(x: OpInputs) -> Work | None:
    """copy_(self, src): src read, self written."""
    if not (x.tensor(0) and x.tensor(1)):
        return None
    return Work(0.0, total([x.tensor_bytes(0), x.tensor_bytes(1)]), dtypes.peak_class(x.dtype(0)), "copy")


def clone(x: OpInputs) -> Work | None:
    """clone / contiguous: the tensor read and written (contiguous of a contiguous tensor copies
    nothing and launches no kernel: its device time is 0, so it gets no rate)."""
    b = x.tensor_bytes(0) if x.tensor(0) else None
    return None if b is None else Work(0.0, 2 * b, dtypes.peak_class(x.dtype(0)), "copy")


def to_copy(x: OpInputs) -> Work | None:
    """_to_copy(self, dtype, ...): the result's dtype from Concrete Inputs (ScalarType number; empty
    keeps self's dtype)."""
    if not x.tensor(0) or len(x.concrete) < 2:
        return None
    text = x.value(1).strip()
    code = int_list(text)
    out_dtype = x.dtype(0) if text in ("", "None") else dtypes.SCALAR_TYPES.get(code[0]) if code else None
    if out_dtype is None:
        return None
    return Work(0.0, total([x.tensor_bytes(0), out_bytes(x.shape(0), out_dtype)]), dtypes.peak_class(x.dtype(0)),
                "copy")


def _reduced_out(x: OpInputs, shape: Shape) -> Shape | None:
    """The output shape of a reduction over Concrete Inputs' dims (keepdim or not); all dims when the
    call takes none ([] too)."""
    takes_dims = len(x.types) > 1 and x.dtype(1) in dtypes.LIST_TAGS
    if not takes_dims:
        return () if len(x.shapes) <= 2 else None
    dims = int_list(x.value(1)) if x.value(1).strip() != "[]" else []
    keep = flag(x.value(2)) if len(x.concrete) > 2 else None
    if dims is None or keep is None:
        return None
    if not dims:
        return tuple(1 for _ in shape) if keep else ()
    picked = {d % len(shape) for d in dims} if shape else set()
    return tuple(1 if i in picked else d for i, d in enumerate(shape) if keep or i not in picked)


def reduction(x: OpInputs) -> Work | None:
    shape = x.shape(0)
    if not x.tensor(0) or shape is None:
        return None
    out = _reduced_out(x, shape)
    if out is None:
        return None
    base = x.name.split("::")[-1]
    out_dtype = "int64" if base in ("argmax", "argmin") else "bool" if base in ("all", "any") else x.dtype(0)
    moved = total([x.tensor_bytes(0), out_bytes(out, out_dtype)])
    return Work(float(elements(shape)), moved, dtypes.peak_class(x.dtype(0)), "reduction")


def softmax(x: OpInputs) -> Work | None:
    """_softmax / _log_softmax(self, dim, half_to_float), softmax / log_softmax(self, dim, dtype)."""
    if not x.tensor(0) or x.shape(0) is None:
        return None
    to_float = x.name.startswith("aten::_") and flag(x.value(2)) is True
    moved = total([x.tensor_bytes(0), out_bytes(x.shape(0), "float" if to_float else x.dtype(0))])
    return Work(5.0 * elements(x.shape(0)), moved, dtypes.peak_class(x.dtype(0)), "softmax")


def softmax_backward(x: OpInputs) -> Work | None:
    """_softmax_backward_data / _log_softmax_backward_data(grad_output, output, dim, input_dtype)."""
    if not (x.tensor(0) and x.tensor(1)) or x.shape(0) is None:
        return None
    moved = total([x.tensor_bytes(0), x.tensor_bytes(1), x.tensor_bytes(0)])
    return Work(4.0 * elements(x.shape(0)), moved, dtypes.peak_class(x.dtype(0)), "softmax")


def _acc_size(dtype: str) -> int:
    """torch's accumulation type of a norm's statistics: double for double, else float."""
    return 8 if dtypes.size(dtype) == 8 and dtypes.peak_class(dtype) == "fp64" else 4


def layer_norm(x: OpInputs) -> Work | None:
    """layer_norm / native_layer_norm(input, normalized_shape, weight?, bias?, eps): input, weight,
    bias read, the output and (native) mean and rstd written; normalized size from weight's shape."""
    si, sw = x.shape(0), x.shape(2)
    if not x.tensor(0) or not si:
        return None
    d = math.prod(sw) if x.tensor(2) and sw else math.prod(int_list(x.value(1)) or [0])
    if d <= 0 or elements(si) % d:
        return None
    rows = elements(si) // d
    stats = 2.0 * rows * _acc_size(x.dtype(0)) if x.name == "aten::native_layer_norm" else 0.0
    moved = total([inputs_bytes(x, (0, 2, 3)), out_bytes(si, x.dtype(0)), stats])
    return Work((7.0 if x.tensor(2) else 5.0) * elements(si), moved, dtypes.peak_class(x.dtype(0)), "norm")


def rms_norm(x: OpInputs) -> Work | None:
    """rms_norm(input, normalized_shape, weight?, eps): input and weight read, output written."""
    si = x.shape(0)
    if not x.tensor(0) or not si:
        return None
    moved = total([inputs_bytes(x, (0, 2)), out_bytes(si, x.dtype(0))])
    return Work(4.0 * elements(si), moved, dtypes.peak_class(x.dtype(0)), "norm")


def batch_norm(x: OpInputs) -> Work | None:
    """batch_norm / native / cudnn / miopen batch norm, _batch_norm_impl_index(input, weight, bias,
    running_mean, running_var, ...): the input and the per-channel tensors read, the output written."""
    si = x.shape(0)
    if not x.tensor(0) or not si or len(si) < 2:
        return None
    moved = total([inputs_bytes(x, range(5)), out_bytes(si, x.dtype(0))])
    return Work(7.0 * elements(si), moved, dtypes.peak_class(x.dtype(0)), "norm")


def group_norm(x: OpInputs) -> Work | None:
    """group_norm(input, num_groups, weight, bias, eps) / native_group_norm(input, weight, bias, N, C,
    HxW, group, eps): bytes of the tensors given and the output (statistics left out: N x groups)."""
    si = x.shape(0)
    if not x.tensor(0) or not si:
        return None
    params = (2, 3) if x.name == "aten::group_norm" else (1, 2)
    moved = total([inputs_bytes(x, (0, *params)), out_bytes(si, x.dtype(0))])
    return Work(7.0 * elements(si), moved, dtypes.peak_class(x.dtype(0)), "norm")


def norm_backward(x: OpInputs) -> Work | None:
    """native_layer_norm_backward / cudnn / native batch norm backward: every tensor given read,
    the input gradient (the size of the first input) written; the parameter gradients (a vector
    per channel) left out. Bytes only."""
    tensors = [i for i in range(len(x.shapes)) if x.tensor(i)]
    if not tensors or x.shape(0) is None:
        return None
    return Work(None, total([inputs_bytes(x, tensors), x.tensor_bytes(0)]), dtypes.peak_class(x.dtype(0)), "norm")


def embedding(x: OpInputs) -> Work | None:
    """embedding(weight[V, D], indices): the indices and numel(indices) rows of D read, as many
    written."""
    sw, si = x.shape(0), x.shape(1)
    if sw is None or si is None or len(sw) != 2 or not x.tensor(1):
        return None
    rows = out_bytes((elements(si), sw[1]), x.dtype(0))
    return Work(0.0, total([x.tensor_bytes(1), rows, rows]), dtypes.peak_class(x.dtype(0)), "embedding")


OPERATORS = {
    **{f"aten::{name}": elementwise for name in _ELEMENTWISE},
    "aten::fill_": fill, "aten::zero_": fill, "aten::copy_": copy_, "aten::clone": clone,
    "aten::contiguous": clone, "aten::_to_copy": to_copy,
    **{f"aten::{name}": reduction for name in ("sum", "mean", "amax", "amin", "prod", "var", "std", "logsumexp",
                                               "linalg_vector_norm", "all", "any", "argmax", "argmin")},
    **{f"aten::{name}": softmax for name in ("_softmax", "softmax", "_log_softmax", "log_softmax")},
    "aten::_softmax_backward_data": softmax_backward, "aten::_log_softmax_backward_data": softmax_backward,
    "aten::layer_norm": layer_norm, "aten::native_layer_norm": layer_norm, "aten::rms_norm": rms_norm,
    **{f"aten::{name}": batch_norm for name in ("batch_norm", "native_batch_norm", "cudnn_batch_norm",
                                                "miopen_batch_norm", "_batch_norm_impl_index",
                                                "_native_batch_norm_legit", "_batch_norm_with_update")},
    "aten::group_norm": group_norm, "aten::native_group_norm": group_norm,
    **{f"aten::{name}": norm_backward for name in ("native_layer_norm_backward", "cudnn_batch_norm_backward",
                                                   "native_batch_norm_backward", "miopen_batch_norm_backward",
                                                   "native_group_norm_backward")},
    "aten::embedding": embedding,
}
