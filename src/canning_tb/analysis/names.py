"""Names that differ between torch / torch_npu versions and between CUDA and NPU, mapped to one
canonical name so that a comparison matches them.

A `NameMap` holds:
- `operators`: exact operator name -> canonical name (e.g. "npu::npu_fusion_attention" ->
  "aten::_scaled_dot_product_flash_attention");
- `operator_patterns`: (regex, replacement) tried in order on names without an exact entry
  (Python `re.sub` syntax, the first pattern that matches wins);
- `kernels`: exact kernel name -> canonical name;
- `kernel_families`: (regex, family) tried in order, case-insensitive: a kernel's family
  ("matmul", "convolution", ...) for the per-family table, "other" when none matches.

User entries (the logdir's `canning_names.json`, docs/http_api.md "Name map") come first, the
defaults after them, so a user entry overrides a default one. The analysis receives the map; it
never reads files (store/name_map.py does).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

FILE_NAME = "canning_names.json"
OTHER_FAMILY = "other"

DEFAULT_OPERATORS = {
    # torch_npu's fused kernels that stand where CUDA runs the aten composite
    "npu::npu_fusion_attention": "aten::_scaled_dot_product_flash_attention",
    "npu::npu_fusion_attention_grad": "aten::_scaled_dot_product_flash_attention_backward",
    "npu::npu_rms_norm": "aten::rms_norm",
    "npu::npu_dtype_cast": "aten::_to_copy",
    "npu::npu_linear": "aten::linear",
    "npu::npu_confusion_transpose": "aten::transpose",
    "npu::npu_scaled_masked_softmax": "aten::_softmax",
}

DEFAULT_OPERATOR_PATTERNS = [
    # old and new autograd node names: "MmBackward" (torch < 2) vs "MmBackward0"
    (r"^autograd::engine::evaluate_function: (\w+?)\d*$", r"autograd::engine::evaluate_function: \1"),
    (r"^(\w+Backward)\d+$", r"\1"),
]

DEFAULT_KERNEL_FAMILIES = [
    # not a bare "broadcast": Ascend's aclnn*_BroadcastTo* kernels are tensor broadcasts
    ("communication", r"nccl|hccl|hcom_|allreduce|all_reduce|allgather|all_gather|reducescatter|reduce_scatter|alltoall"),
    ("attention", r"flash|fmha|attention"),
    ("matmul", r"gemm|matmul|cublas|cutlass|xmma|^(aclnn)?(batch)?mm([_A-Z]|$)"),
    ("convolution", r"conv|winograd|wgrad|dgrad|im2col|implicit_convolve|cudnn"),
    ("normalization", r"norm|bn_fw|bn_bw|bntraining"),
    ("softmax", r"softmax"),
    ("pooling", r"pool"),
    ("reduction", r"reduce|argmax|argmin"),
    ("optimizer", r"multi_tensor|adam|sgd|applymomentum|lamb"),
    ("copy / layout", r"transdata|transpose|memcpy|memset|copy|cast|concat|slice|split|gather|scatter|"
                      r"index|fill|permute|contiguous"),
    ("elementwise", r"elementwise|vectorized|unrolled|add|mul|sub|div|relu|gelu|silu|sigmoid|tanh|exp|"
                    r"sqrt|neg|pow|where|clamp|activation|dropout|mask"),
]


@dataclass
class NameMap:
    operators: dict[str, str] = field(default_factory=dict)
    operator_patterns: list[tuple[re.Pattern, str]] = field(default_factory=list)
    kernels: dict[str, str] = field(default_factory=dict)
    kernel_families: list[tuple[str, re.Pattern]] = field(default_factory=list)

    def operator(self, name: str) -> str:
        exact = self.operators.get(name)
        if exact is not None:
            return exact
        for pattern, replacement in self.operator_patterns:
            if pattern.search(name):
                return pattern.sub(replacement, name)
        return name

    def kernel(self, name: str) -> str:
        return self.kernels.get(name, name)

    def family(self, kernel: str) -> str:
        for family, pattern in self.kernel_families:
            if pattern.search(kernel):
                return family
        return OTHER_FAMILY


class NameMapError(ValueError):
    """The user's name map is not what docs/http_api.md "Name map" describes."""


def _pairs(value, key: str) -> list[tuple[str, str]]:
    if not isinstance(value, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p)
                                              for p in value):
        raise NameMapError(f"{key!r} must be a list of [string, string] pairs")
    return [(a, b) for a, b in value]


def _strings(value, key: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise NameMapError(f"{key!r} must be an object of string -> string")
    return dict(value)


def _compile(pattern: str, key: str, flags: int = 0) -> re.Pattern:
    try:
        return re.compile(pattern, flags)
    except re.error as e:
        raise NameMapError(f"{key!r}: bad regular expression {pattern!r}: {e}") from None


def name_map(user: dict | None = None) -> NameMap:
    """The defaults, with the entries of `user` (the parsed JSON of the map file) before them."""
    user = user or {}
    if not isinstance(user, dict):
        raise NameMapError("the name map must be a JSON object")
    unknown = set(user) - {"version", "operators", "operator_patterns", "kernels", "kernel_families"}
    if unknown:
        raise NameMapError(f"unknown keys: {', '.join(sorted(unknown))}")
    op_patterns = _pairs(user.get("operator_patterns", []), "operator_patterns") + DEFAULT_OPERATOR_PATTERNS
    families = [(f, p) for p, f in _pairs(user.get("kernel_families", []), "kernel_families")] + DEFAULT_KERNEL_FAMILIES
    return NameMap(
        operators={**DEFAULT_OPERATORS, **_strings(user.get("operators", {}), "operators")},
        operator_patterns=[(_compile(p, "operator_patterns"), r) for p, r in op_patterns],
        kernels=_strings(user.get("kernels", {}), "kernels"),
        kernel_families=[(f, _compile(p, "kernel_families", re.IGNORECASE)) for f, p in families])
