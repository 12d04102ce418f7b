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

Patterns from the file are data, and matching them must not freeze a viewer: they are compiled by
RE2 (google-re2), whose matching takes time linear in the name whatever the pattern (`^(a+)+$` on
"aaaa…a!" is as fast as any other), and which refuses what needs backtracking (back-references,
look-arounds). A map holds at most MAX_PATTERNS patterns of at most MAX_PATTERN_CHARS characters; a
replacement may only name groups its pattern has. Without RE2 installed, user patterns are refused
(the map's problem says so) and the built-in ones, ours, run on Python's `re`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

try:
    import re2
except ImportError:  # the map's problem says that patterns need it
    re2 = None

MAX_PATTERNS = 256
MAX_PATTERN_CHARS = 1000
_GROUP_REF = re.compile(r"\\(\d+)|\\g<(\w+)>")

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
    operator_patterns: list[tuple[object, str]] = field(default_factory=list)  # re / re2 patterns
    kernels: dict[str, str] = field(default_factory=dict)
    kernel_families: list[tuple[str, object]] = field(default_factory=list)
    _seen: dict[str, str] = field(default_factory=dict, repr=False, compare=False)  # name -> canonical

    def operator(self, name: str) -> str:
        found = self._seen.get(name)
        if found is None:
            found = self._seen[name] = self._operator(name)
        return found

    def _operator(self, name: str) -> str:
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


def _compile(pattern: str, key: str, ignore_case: bool = False):
    """A user pattern, compiled by RE2 (linear-time matching; module doc)."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise NameMapError(f"{key!r}: a pattern of {len(pattern)} characters (at most {MAX_PATTERN_CHARS})")
    if re2 is None:
        raise NameMapError(f"{key!r}: patterns need the google-re2 package (pip install google-re2)")
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        why = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        raise NameMapError(f"{key!r}: bad regular expression {pattern[:80]!r}: {why} "
                           "(RE2 syntax: no back-references or look-arounds)") from None


def _replacement(compiled, replacement: str, key: str) -> str:
    """A replacement that names only groups the pattern has (`\\9` of a 1-group pattern is refused here,
    not when a name first matches)."""
    groups = compiled.groups
    names = set(getattr(compiled, "groupindex", {}) or {})
    for number, name in _GROUP_REF.findall(replacement):
        ref = number or name
        if (ref.isdigit() and int(ref) > groups) or (not ref.isdigit() and ref not in names):
            raise NameMapError(f"{key!r}: replacement {replacement[:80]!r} names group {ref}, "
                               f"which its pattern does not have ({groups} groups)")
    return replacement


def _user_patterns(user: dict) -> tuple[list, list]:
    op_pairs = _pairs(user.get("operator_patterns", []), "operator_patterns")
    family_pairs = _pairs(user.get("kernel_families", []), "kernel_families")
    if len(op_pairs) + len(family_pairs) > MAX_PATTERNS:
        raise NameMapError(f"{len(op_pairs) + len(family_pairs)} patterns (at most {MAX_PATTERNS})")
    ops = []
    for pattern, replacement in op_pairs:
        compiled = _compile(pattern, "operator_patterns")
        ops.append((compiled, _replacement(compiled, replacement, "operator_patterns")))
    families = [(family, _compile(pattern, "kernel_families", ignore_case=True)) for pattern, family in family_pairs]
    return ops, families


_DEFAULT_OPS = [(re.compile(p), r) for p, r in DEFAULT_OPERATOR_PATTERNS]
_DEFAULT_FAMILIES = [(f, re.compile(p, re.IGNORECASE)) for f, p in DEFAULT_KERNEL_FAMILIES]


def name_map(user: dict | None = None) -> NameMap:
    """The defaults, with the entries of `user` (the parsed JSON of the map file) before them."""
    user = user or {}
    if not isinstance(user, dict):
        raise NameMapError("the name map must be a JSON object")
    unknown = set(user) - {"version", "operators", "operator_patterns", "kernels", "kernel_families"}
    if unknown:
        raise NameMapError(f"unknown keys: {', '.join(sorted(unknown))}")
    ops, families = _user_patterns(user)
    return NameMap(
        operators={**DEFAULT_OPERATORS, **_strings(user.get("operators", {}), "operators")},
        operator_patterns=ops + _DEFAULT_OPS,
        kernels=_strings(user.get("kernels", {}), "kernels"),
        kernel_families=families + _DEFAULT_FAMILIES)
