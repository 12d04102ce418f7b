"""NPU kernels without a matrix model (docs/efficiency.md#npu-kernels): torch_npu's kernel tables
give every input and output tensor (shape, dtype, format as stored), so any such kernel's bytes are
its tensors read once and written once. FLOPs only for the CANN types below, per element of the
outputs (elementwise, softmax; a Foreach* kernel's outputs are its list) or of the first input
(reductions, norms), as the operator
families of models_memory count them; format conversions and copies (TransData, Cast, TensorMove,
MemSet ...) 0; any other type: bytes only.
"""
from __future__ import annotations

from . import dtypes
from .inputs import OpInputs
from .work import Work, elements, inputs_bytes, out_bytes, total

_PER_OUTPUT = {
    **dict.fromkeys(("Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "DivNoNan", "Maximum", "Minimum", "Pow",
                     "Relu", "ReluV2", "ReluGrad", "ReluGradV2", "Gelu", "GeluV2", "GeluGrad", "FastGelu",
                     "FastGeluGrad", "Swish", "SwishGrad", "Silu", "SiluGrad", "Sigmoid", "SigmoidGrad", "Tanh",
                     "TanhGrad", "Exp", "Log", "Sqrt", "Rsqrt", "Neg", "Abs", "Square", "Reciprocal", "Muls",
                     "Adds", "Axpy", "AxpyV2", "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
                     "LogicalAnd", "LogicalOr", "LogicalNot", "ClipByValue", "Sign", "Floor", "Round",
                     "ForeachAddList", "ForeachMulScalar", "ForeachMulList", "ForeachDivList", "ForeachSubList",
                     "ForeachAddScalar", "ForeachDivScalar", "ForeachSqrt", "ForeachNeg"), 1.0),
    **dict.fromkeys(("Addcmul", "Addcdiv", "Lerp", "ForeachAddcmulScalar", "ForeachAddcdivScalar",
                     "ForeachAddcmulScalarList", "ForeachAddcdivScalarList", "ForeachLerpScalar"), 3.0),
    **dict.fromkeys(("SoftmaxV2", "LogSoftmaxV2", "Softmax"), 5.0),
    **dict.fromkeys(("SoftmaxGrad", "LogSoftmaxGrad", "SoftmaxGradExt"), 4.0),
    **dict.fromkeys(("TransData", "Cast", "TensorMove", "MemSet", "Fill", "ZerosLike", "OnesLike", "BroadcastTo",
                     "Transpose", "TransposeD", "ConcatD", "ConcatV2", "SplitV", "SplitD", "Slice", "StridedSlice",
                     "StridedSliceD", "Select", "SelectV2", "MaskedFill", "ViewCopy", "AsStrided", "Identity"), 0.0),
}
_PER_INPUT = {
    **dict.fromkeys(("ReduceSum", "ReduceSumD", "ReduceMean", "ReduceMeanD", "ReduceMax", "ReduceMaxD", "ReduceMin",
                     "ReduceProd", "ReduceAll", "ReduceAny", "ArgMaxV2", "ArgMin"), 1.0),
    **dict.fromkeys(("LayerNorm", "LayerNormV3", "LayerNormV4", "GroupNorm", "GroupNormV2", "BNTrainingReduce",
                     "BNTrainingUpdate", "BNInfer"), 7.0),
    **dict.fromkeys(("RmsNorm", "AddRmsNorm"), 4.0),
}
# models_memory's families, by CANN type (for the view's label)
_FAMILY = {**dict.fromkeys(("SoftmaxV2", "LogSoftmaxV2", "Softmax", "SoftmaxGrad", "LogSoftmaxGrad",
                            "SoftmaxGradExt"), "softmax"),
           **dict.fromkeys((k for k in _PER_INPUT if k.startswith(("Reduce", "Arg"))), "reduction")}


def npu_tensors(x: OpInputs) -> Work | None:
    """Any NPU kernel whose tables list its tensors: their bytes; FLOPs by the tables above."""
    if not x.out_shapes or not x.shapes or any(s is None for s in x.shapes) or any(s is None for s in x.out_shapes):
        return None
    written = total([out_bytes(s, x.out_types[i] if i < len(x.out_types) else "") for i, s in enumerate(x.out_shapes)])
    moved = total([inputs_bytes(x, range(len(x.shapes))), written])
    flops = None
    if x.op_type in _PER_OUTPUT:
        flops = _PER_OUTPUT[x.op_type] * sum(elements(s) for s in x.out_shapes)
    elif x.op_type in _PER_INPUT:
        flops = _PER_INPUT[x.op_type] * elements(x.shape(0))
    per_output = _PER_OUTPUT.get(x.op_type)
    family = _FAMILY.get(x.op_type) or ("norm" if x.op_type in _PER_INPUT else "copy" if per_output == 0.0
                                        else "elementwise" if per_output else "tensors")
    dtype = next((dtypes.peak_class(t) for t in x.types if dtypes.peak_class(t)), "")
    return Work(flops, moved, dtype, family)
