"""Convolutions: FLOPs = 2 x MACs, MACs = N x C_out x prod(output spatial) x (C_in / groups) x
prod(kernel) for the forward pass and for each gradient of the backward pass (the input gradient
and the weight gradient do the same multiply-adds); bytes = the tensors read once and written once
(docs/efficiency.md#convolution).

The forward pass needs the output's spatial size, i.e. stride / padding / dilation, which only
Kineto's "Concrete Inputs" record (torch >= 2.3 with record_shapes); the backward passes have the
output gradient's shape and need no stride. NPU kernels (Conv2D, Conv2DBackpropInput /
Conv2DBackpropFilter) give every tensor in CANN's formats: NC1HWC0 activations and FRACTAL_Z weights
[C1 x kh x kw, N1, N0, C0], so their FLOPs are the cube's, channels padded to C0.
"""
from __future__ import annotations

import math

from . import dtypes
from .inputs import OpInputs, Shape, bool_list, flag, int_list
from .work import Work, inputs_bytes, out_bytes, total

MODEL = "conv"

# operator -> indexes of (stride, padding, dilation, groups, transposed, output_padding, bias); -1 none
_FORWARD = {
    "aten::conv1d": (3, 4, 5, 6, -1, -1, 2), "aten::conv2d": (3, 4, 5, 6, -1, -1, 2),
    "aten::conv3d": (3, 4, 5, 6, -1, -1, 2),
    "aten::convolution": (3, 4, 5, 8, 6, 7, 2), "aten::_convolution": (3, 4, 5, 8, 6, 7, 2),
    "aten::cudnn_convolution": (3, 2, 4, 5, -1, -1, -1), "aten::mkldnn_convolution": (4, 3, 5, 6, -1, -1, 2),
    "aten::miopen_convolution": (4, 3, 5, 6, -1, -1, 2),
    "aten::conv_transpose1d": (3, 4, 7, 6, -2, 5, 2), "aten::conv_transpose2d": (3, 4, 7, 6, -2, 5, 2),
    "aten::conv_transpose3d": (3, 4, 7, 6, -2, 5, 2),
}


def _per_dim(values: list[int] | None, dims: int) -> list[int] | None:
    if values is None:
        return None
    if len(values) == 1:
        return values * dims
    return values if len(values) == dims else None


def _padding(x: OpInputs, i: int, dims: int) -> list[int] | None:
    """Per dim padding; None for "same" (the caller keeps the input's size) or an unreadable value."""
    text = x.value(i).strip().strip("'\"")
    if text == "valid":
        return [0] * dims
    return None if text == "same" else _per_dim(int_list(text), dims)


def _conv_out(spatial: Shape, kernel: Shape, stride, padding, dilation, transposed: bool, out_pad) -> list[int]:
    if transposed:
        return [(i - 1) * s - 2 * p + d * (k - 1) + op + 1
                for i, k, s, p, d, op in zip(spatial, kernel, stride, padding, dilation, out_pad)]
    return [(i + 2 * p - d * (k - 1) - 1) // s + 1 for i, k, s, p, d in zip(spatial, kernel, stride, padding, dilation)]


def conv_forward(x: OpInputs) -> Work | None:
    """conv*d / convolution / cudnn / mkldnn / miopen convolution, conv_transpose*d."""
    si, sw = x.shape(0), x.shape(1)
    spec = _FORWARD.get(x.name)
    if spec is None or si is None or sw is None or len(si) < 3 or len(sw) != len(si):
        return None
    st, pa, di, gr, tr, op, bias = spec
    dims = len(si) - 2
    transposed = True if tr == -2 else (flag(x.value(tr)) if tr >= 0 else False)
    groups = int_list(x.value(gr)) if gr >= 0 else None
    stride, dilation = _per_dim(int_list(x.value(st)), dims), _per_dim(int_list(x.value(di)), dims)
    out_pad = _per_dim(int_list(x.value(op)), dims) if op >= 0 and transposed else [0] * dims
    if transposed is None or not groups or stride is None or dilation is None or out_pad is None:
        return None
    padding = _padding(x, pa, dims)
    if padding is None and x.value(pa).strip().strip("'\"") == "same":
        out_sp = list(si[2:])
    elif padding is None:
        return None
    else:
        out_sp = _conv_out(si[2:], sw[2:], stride, padding, dilation, transposed, out_pad)
    g = groups[0]
    c_out = sw[1] * g if transposed else sw[0]
    if min(out_sp, default=0) <= 0 or (not transposed and si[1] != sw[1] * g) or (transposed and si[1] != sw[0]):
        return None
    macs = si[0] * si[1] * math.prod(si[2:]) * (c_out // g) * math.prod(sw[2:]) if transposed \
        else si[0] * c_out * math.prod(out_sp) * sw[1] * math.prod(sw[2:])
    moved = total([inputs_bytes(x, (0, 1) + ((bias,) if bias >= 0 else ())),
                   out_bytes((si[0], c_out, *out_sp), x.dtype(0))])
    return Work(2.0 * macs, moved, dtypes.peak_class(x.dtype(0)), MODEL, matrix=True)


def _backward_macs(grad: Shape, inp: Shape, w: Shape, transposed: bool | None) -> int | None:
    """MACs of one gradient, from the shapes: the weight's dim 1 is C_in / groups (C_out / groups
    for a transposed convolution), so groups need not be known. None when the shapes fit neither
    case or (transposed unknown) both."""
    plain = w[0] == grad[1] and inp[1] % w[1] == 0
    trans = w[0] == inp[1] and grad[1] % w[1] == 0
    if transposed is None:
        if plain == trans:
            return None
        transposed = trans
    if transposed and trans:
        return inp[0] * inp[1] * math.prod(inp[2:]) * w[1] * math.prod(w[2:])
    if not transposed and plain:
        return grad[0] * grad[1] * math.prod(grad[2:]) * w[1] * math.prod(w[2:])
    return None


def conv_backward(x: OpInputs) -> Work | None:
    """convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    transposed, output_padding, groups, output_mask): the gradients output_mask asks for."""
    g, i, w = x.shape(0), x.shape(1), x.shape(2)
    mask = bool_list(x.value(10))
    if g is None or i is None or w is None or not len(g) == len(i) == len(w) >= 3 or not mask or len(mask) != 3:
        return None
    macs = _backward_macs(g, i, w, flag(x.value(7)))
    if macs is None:
        return None
    read = [x.tensor_bytes(0), x.tensor_bytes(2) if mask[0] else 0.0, x.tensor_bytes(1) if mask[1] else 0.0]
    written = [x.tensor_bytes(1) if mask[0] else 0.0, x.tensor_bytes(2) if mask[1] else 0.0,
               out_bytes((g[1],), x.dtype(0)) if mask[2] else 0.0]
    return Work(2.0 * macs * (int(mask[0]) + int(mask[1])), total(read + written), dtypes.peak_class(x.dtype(0)),
                MODEL, matrix=True)


def cudnn_backward_input(x: OpInputs) -> Work | None:
    """cudnn_convolution_backward_input(self_size, grad_output, weight, ...) (torch <= 1.10): the
    input gradient of a (not transposed) convolution; its size is the weight's dim 1 x groups, not
    recorded, so its bytes are not modelled."""
    g, w = x.shape(1), x.shape(2)
    if g is None or w is None or len(g) != len(w) or len(g) < 3 or w[0] != g[1]:
        return None
    macs = g[0] * g[1] * math.prod(g[2:]) * w[1] * math.prod(w[2:])
    return Work(2.0 * macs, None, dtypes.peak_class(x.dtype(1)), MODEL, matrix=True)


OPERATORS = {**{name: conv_forward for name in _FORWARD}, "aten::convolution_backward": conv_backward,
             "aten::cudnn_convolution_backward_input": cudnn_backward_input}


# -- NPU kernels (NC1HWC0 / FRACTAL_Z) ----------------------------------------------------------
def _fractal_z(w: Shape | None) -> tuple[int, int] | None:
    """FRACTAL_Z [C1 x kh x kw, N1, N0, C0] -> (padded C_out, padded C_in x kh x kw)."""
    if w is None or len(w) != 4:
        return None
    return w[1] * w[2], w[0] * w[3]


def _fmt(x: OpInputs, i: int) -> str:
    return (x.formats[i] if i < len(x.formats) else "").upper()


def _npu_conv(x: OpInputs, act: int, weight: int, grad_out: Shape | None) -> Work | None:
    """MACs = N x Ho x Wo x C_out x (C_in x kh x kw), every size as the 5-D NC1HWC0 grad / output
    and the FRACTAL_Z weight hold it (C0 padding included)."""
    fz = _fractal_z(x.shape(weight) if weight >= 0 else (x.out_shapes[0] if x.out_shapes else None))
    if fz is None or grad_out is None or len(grad_out) != 5 or fz[0] != grad_out[1] * grad_out[4]:
        return None
    n, _, ho, wo, _ = grad_out
    macs = n * ho * wo * fz[0] * fz[1]
    moved = total([inputs_bytes(x, range(len(x.shapes)))] +
                  [out_bytes(s, x.out_types[i] if i < len(x.out_types) else "") for i, s in enumerate(x.out_shapes)])
    return Work(2.0 * macs, moved, dtypes.peak_class(x.dtype(act)), MODEL, matrix=True)


def npu_conv2d(x: OpInputs) -> Work | None:
    """Conv2D(x NC1HWC0, filter FRACTAL_Z, bias?) -> y NC1HWC0."""
    if "NC1HWC0" not in _fmt(x, 0) or "FRACTAL_Z" not in _fmt(x, 1) or not x.out_shapes:
        return None
    return _npu_conv(x, 0, 1, x.out_shapes[0])


def npu_conv2d_backprop_input(x: OpInputs) -> Work | None:
    """Conv2DBackpropInput(input_size, filter FRACTAL_Z, out_backprop NC1HWC0) -> dx."""
    if "FRACTAL_Z" not in _fmt(x, 1) or "NC1HWC0" not in _fmt(x, 2):
        return None
    return _npu_conv(x, 2, 1, x.shape(2))


def npu_conv2d_backprop_filter(x: OpInputs) -> Work | None:
    """Conv2DBackpropFilter(x NC1HWC0, filter_size, out_backprop NC1HWC0) -> dw FRACTAL_Z."""
    if "NC1HWC0" not in _fmt(x, 2) or not x.out_shapes:
        return None
    return _npu_conv(x, 0, -1, x.shape(2))


KERNELS = {"Conv2D": npu_conv2d, "Conv2DBackpropInput": npu_conv2d_backprop_input,
           "Conv2DBackpropFilter": npu_conv2d_backprop_filter}
