"""Names that differ between torch / torch_npu versions and between CUDA and NPU, mapped to one
canonical name so that a comparison matches them.

A `NameMap` holds:
- `operators`: exact operator name -> canonical name (e.g. "npu::npu_fusion_attention" ->
  "aten::_scaled_dot_product_flash_attention");
- `operator_patterns`: (regex, replacement) tried in order on names without an exact entry
  (Python `re.sub` syntax, the first pattern that matches wins);
- `kernels`: exact kernel name -> canonical name;
- `kernel_families`: (regex, family) tried in order, case-insensitive: a kernel's family
  ("matmul", "convolution", ...) for the per-family table, "other" when none matches. The user's
  patterns are searched in the name; the defaults (VENDOR_TOKENS) match whole tokens only. A digest's
  kernels carry the family their launching operator gives (kernel_families.py); `family_of` prefers it.

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
from functools import lru_cache

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

# Kernel families by name, the last resort (analysis/kernel_families.py first asks the launching operator and
# the profiler's category). A name is cut into whole tokens (name_tokens): its identifiers ("deep_ep",
# "Cijk_Alik_Bljk_SB"), their parts between underscores ("Cijk", "MatMulV2") and their camel-case words
# ("Mat", "Mul"); a pattern matches a whole token, never a piece of one: "lamb" is not in "{lambda(int)#1}",
# "adam" not in "adamant". One table per vendor; the families are tried in FAMILY_ORDER over all tables (a
# family earlier in the order wins: a flash-attention kernel built on CUTLASS GEMMs is attention, an implicit
# GEMM convolution is a convolution). No name makes an "optimizer" kernel: only an optimizer step range does.
FAMILY_ORDER = ("communication", "attention", "convolution", "matmul", "embedding", "normalization", "softmax", "pooling",
                "reduction", "copy / layout", "elementwise")
VENDOR_TOKENS: dict[str, dict[str, str]] = {
    "nvidia": {  # NCCL, NVSHMEM, DeepEP, symmetric memory; cuBLAS / cuBLASLt / CUTLASS / cuDNN / FlashAttention
        "communication": r"nccl\w*|nvshmemi?\w*|deep_ep|multimem\w*|cross_device_reduce\w*",
        "attention": r"flash\w*|fmha\w*|attention|attn|mha|sdpa|flashinfer|paged_attention\w*",
        "convolution": r"conv\d?d?|convolve|convolution|implicit_convolve\w*|fprop|dgrad\w*|wgrad\w*|winograd\w*|"
                       r"im2col\w*|fft2d\w*|nchwtonhwc\w*|nhwctonchw\w*|[sdh]cudnn\w*|cask_cudnn\w*",
        "matmul": r"(?!fbgemm)[a-z]{0,3}\d*gemm[a-z0-9]*|gemv\w*|gemmk\w*|cublas\w*|cublaslt\w*|cutlass\w*|xmma|nvjet\w*|"
                  r"deep_gemm|splitkreduce\w*",
        "normalization": r"bn_fw\w*|bn_bw\w*|batch_norm\w*|layer_norm\w*",
    },
    "amd": {  # RCCL, MoRI; rocBLAS / hipBLASLt (Tensile's Cijk_*), MIOpen, Composable Kernel (CK), aiter
        "communication": r"rccl\w*|mori",
        "attention": r"batched_gemm_softmax_gemm\w*|fmha\w*|ck_tile_fmha\w*",
        "convolution": r"miopen\w*conv\w*|igemm_(?:fwd|bwd|wrw)\w*|gridwise_convolution\w*|naive_conv\w*|"
                       r"conv_(?:fwd|bwd|wrw)\w*",
        "matmul": r"cijk|rocblas\w*|hipblaslt\w*|tensile\w*|kernel_gemm\w*|gemm_xdl\w*",
        "normalization": r"miopenbatchnorm\w*",
    },
    "ascend": {  # HCCL / LCCL; CANN op types (kernel_details' names: aclnnMm_MatMulCommon_MatMulV2, Conv2D1)
        "communication": r"hcom|hccl\w*|lccl\w*|hcom\w*allreduce\w*",
        "attention": r"flashattentionscore\w*|promptflashattention\w*|increflashattention\w*|"
                     r"fusedinferattentionscore\w*|pagedattention\w*",
        "convolution": r"conv(?:\d?d)?(?:backprop(?:input|filter))?(?:v\d+)?\d*|conv3dtranspose\w*|"
                       r"deconvolution\w*",
        "matmul": r"(?:batch)?matmul(?:v\d+)?(?:common)?\d*|aclnn(?:batch)?(?:mm|bmm|addmm|baddbmm|matmul)\w*|"
                  r"groupedmatmul\w*|quantbatchmatmul\w*|weightquantbatchmatmul\w*",
        "normalization": r"bntraining\w*|bninfer\w*|layernorm\w*|rmsnorm\w*|groupnorm\w*",
        "copy / layout": r"transdata\w*|tensormove\w*|castv?\d*|transpose\w*|memset",
    },
    "mtia": {  # MTIA's collectives library (graph/vendors.COMMUNICATION); its compute kernels carry aten names
        "communication": r"mtia_ccl\w*",
    },
    "common": {  # torch's own kernels (at::native), Triton, and words every library uses
        "communication": r"all_?reduce|all_?gather|reduce_?scatter|all_?to_?all\w*|allreduce\w*|allgather\w*|"
                         r"reducescatter\w*|alltoall\w*",
        "attention": r"attention|attn",
        "convolution": r"convolution|conv\d?d",
        "matmul": r"matmul|mm|bmm|addmm|baddbmm|gemm",
        "embedding": r"\w*embedding\w*",
        "normalization": r"\w*norm|normalization|bn",
        "softmax": r"(?:log_?)?soft_?max\w*",
        "pooling": r"\w*pool(?:ing)?\w*",
        "reduction": r"reduce\w*|reduction|argmax|argmin",
        "copy / layout": r"copy\w*|memcpy\w*|memset\w*|cast\w*|cat|concat\w*|slice\w*|split\w*|gather\w*|"
                         r"scatter\w*|index\w*|fill\w*|permute\w*|contiguous|transpose\w*",
        "elementwise": r"elementwise|vectorized|unrolled|add\w?|adds|mul\w?|muls|sub\w?|div\w?|relu\w*|gelu\w*|"
                       r"silu\w*|swish\w*|sigmoid\w*|tanh\w*|exp|sqrt|rsqrt|neg|pow|where|clamp\w*|"
                       r"activation|dropout\w*|mask\w*|threshold\w*|axpy\w*|foreach\w*|multi_tensor_apply\w*",
    },
}
# the old default of a user's map file: still accepted, but no longer what the defaults are
DEFAULT_KERNEL_FAMILIES = [(family, "|".join(f"(?:{t[family]})" for t in VENDOR_TOKENS.values() if family in t))
                           for family in FAMILY_ORDER]

_IDENT_RE = re.compile(r"[A-Za-z0-9_]+")
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@lru_cache(maxsize=1 << 15)
def name_tokens(name: str) -> frozenset[str]:
    """The whole tokens of a kernel name, lower case: identifiers, their parts between underscores, and
    the camel-case words of those parts (digits apart). Remembered: every family's pattern asks."""
    out: set[str] = set()
    for ident in set(_IDENT_RE.findall(name)):  # templated names repeat their identifiers many times
        out.add(ident.lower())
        for part in ident.split("_") if "_" in ident else (ident,):
            if part:
                out.add(part.lower())
                if not part.islower() and not part.isdigit():  # camel case: its words too
                    out.update(w.lower() for w in _CAMEL_RE.findall(part))
    return frozenset(out)


class TokenPattern:
    """A family's token patterns: `search(name)` is true when one of the name's whole tokens matches one
    of them entirely (the same interface as a compiled regex, for NameMap.kernel_families)."""

    def __init__(self, pattern: str):
        self.pattern = pattern
        self._rx = re.compile(pattern, re.IGNORECASE)

    def search(self, name: str) -> bool:
        return any(self._rx.fullmatch(token) for token in name_tokens(name))


@dataclass
class NameMap:
    operators: dict[str, str] = field(default_factory=dict)
    operator_patterns: list[tuple[object, str]] = field(default_factory=list)  # re / re2 patterns
    kernels: dict[str, str] = field(default_factory=dict)
    kernel_families: list[tuple[str, object]] = field(default_factory=list)
    user_families: int = 0  # how many of kernel_families are the user's (they come first)
    _seen: dict[str, str] = field(default_factory=dict, repr=False, compare=False)  # name -> canonical
    _families: dict[str, str] = field(default_factory=dict, repr=False, compare=False)  # kernel -> family

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
        """The family of a kernel by its name alone: the user's patterns, then the vendors' tokens."""
        found = self._families.get(kernel)
        if found is None:
            found = next((family for family, pattern in self.kernel_families[:self.user_families]
                          if pattern.search(kernel)), None) or default_family(kernel)
            self._families[kernel] = found
        return found

    def family_of(self, kernel) -> str:
        """The family of a KernelStat: a user pattern that matches its name first, then the family the
        digest gave it (kernel_families.py: launcher, category, tokens), then its name's tokens."""
        for family, pattern in self.kernel_families[:self.user_families]:
            if pattern.search(kernel.name):
                return family
        return getattr(kernel, "family", "") or self.family(kernel.name)


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
_DEFAULT_FAMILIES = [(f, TokenPattern(p)) for f, p in DEFAULT_KERNEL_FAMILIES]
# every default family in one pattern, one named group each in FAMILY_ORDER: a token's first alternative that
# matches it whole is its earliest family, and a name's family is the earliest over its tokens
_FAMILY_OF_TOKEN = re.compile("|".join(f"(?P<f{i}>{p})" for i, (_, p) in enumerate(DEFAULT_KERNEL_FAMILIES)),
                              re.IGNORECASE)


def default_family(kernel: str) -> str:
    """The family the vendors' token tables give a kernel name (OTHER_FAMILY where no token matches)."""
    best = len(DEFAULT_KERNEL_FAMILIES)
    for token in name_tokens(kernel):
        m = _FAMILY_OF_TOKEN.fullmatch(token)
        if m is not None:
            best = min(best, int(m.lastgroup[1:]))
    return DEFAULT_KERNEL_FAMILIES[best][0] if best < len(DEFAULT_KERNEL_FAMILIES) else OTHER_FAMILY


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
        kernel_families=families + _DEFAULT_FAMILIES, user_families=len(families))
