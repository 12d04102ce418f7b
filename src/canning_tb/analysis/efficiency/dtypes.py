"""Dtype names as the profilers write them -> element size and the class a peak is given for.

Kineto writes the caffe2 TypeMeta names ("float", "c10::BFloat16", "long int"), torch_npu's trace
the same, its kernel tables CANN's ("FLOAT16", "DT_BF16", "INT32"). A name not listed has no size:
the bytes of a tensor of that dtype are unknown, never assumed.
"""
from __future__ import annotations

# name (lower case) -> (bytes per element, peak class or "" when no peak is given for it)
_DTYPES = {
    "double": (8, "fp64"), "float64": (8, "fp64"), "fp64": (8, "fp64"),
    "float": (4, "fp32"), "float32": (4, "fp32"), "fp32": (4, "fp32"), "dt_float": (4, "fp32"),
    "c10::half": (2, "fp16"), "half": (2, "fp16"), "float16": (2, "fp16"), "fp16": (2, "fp16"),
    "dt_float16": (2, "fp16"),
    "c10::bfloat16": (2, "bf16"), "bfloat16": (2, "bf16"), "bf16": (2, "bf16"), "dt_bf16": (2, "bf16"),
    "bfp16": (2, "bf16"),
    "c10::float8_e4m3fn": (1, "fp8"), "c10::float8_e5m2": (1, "fp8"), "c10::float8_e4m3fnuz": (1, "fp8"),
    "c10::float8_e5m2fnuz": (1, "fp8"), "float8_e4m3fn": (1, "fp8"), "float8_e5m2": (1, "fp8"),
    "hifloat8": (1, "fp8"), "fp8": (1, "fp8"), "hif8": (1, "fp8"),
    "signed char": (1, "int8"), "int8": (1, "int8"), "dt_int8": (1, "int8"), "char": (1, "int8"),
    "unsigned char": (1, ""), "uint8": (1, ""), "bool": (1, ""), "dt_bool": (1, ""), "dt_uint8": (1, ""),
    "short int": (2, ""), "int16": (2, ""), "short": (2, ""), "uint16": (2, ""),
    "int": (4, ""), "int32": (4, ""), "dt_int32": (4, ""), "uint32": (4, ""),
    "long int": (8, ""), "long": (8, ""), "int64": (8, ""), "dt_int64": (8, ""), "uint64": (8, ""),
    "c10::complex<float>": (8, ""), "complex64": (8, ""), "c10::complex<double>": (16, ""),
    "complex128": (16, ""), "c10::complex<c10::half>": (4, ""),
}
# what an input's dtype cell holds when the input is not a tensor: torch's IValue tags, capitalised
# ("Int" is a scalar, "int" a tensor of int32), and "" for an undefined tensor or an absent input
NOT_TENSOR = frozenset({"", "Scalar", "ScalarList", "None", "TensorList", "GenericList", "String", "Int", "Double",
                        "Bool", "Device", "Layout", "MemoryFormat", "ScalarType", "IntList", "DoubleList",
                        "BoolList", "Tuple", "Dict", "Object", "Generator", "Storage", "Capsule", "Future", "Stream",
                        "ComplexDouble", "SymInt", "SymFloat", "SymIntList", "Enum", "Quantizer", "Uninitialized"})
LIST_TAGS = frozenset({"ScalarList", "GenericList", "IntList", "SymIntList"})


def size(name: str | None) -> int | None:
    """Bytes per element, None when the dtype is unknown."""
    found = _DTYPES.get((name or "").strip().lower())
    return found[0] if found else None


def peak_class(name: str | None) -> str:
    """The class a device peak is given for ("fp32", "bf16" ...), "" for none."""
    found = _DTYPES.get((name or "").strip().lower())
    return found[1] if found else ""


def is_tensor_type(name: str | None) -> bool:
    """Whether an input's dtype cell names a tensor dtype (known or not)."""
    return (name or "").strip() not in NOT_TENSOR


# torch's ScalarType numbers (c10/core/ScalarType.h), as Kineto's Concrete Inputs write a dtype argument
SCALAR_TYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
                7: "float64", 11: "bool", 15: "bfloat16", 23: "float8_e5m2", 24: "float8_e4m3fn"}
