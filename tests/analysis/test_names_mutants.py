"""The name map (analysis/names.py) by hand: the user's entries before the defaults, the checks of a user's
map file (each refusal's message, each limit at its edge), and the kernel families' order (issue 46,
mutation testing). Expected names come from the module doc and docs/http_api.md "Name map", never from
running the map."""
from types import SimpleNamespace

import pytest

from canning_tb.analysis import names as N
from canning_tb.analysis.names import NameMapError, TokenPattern, default_family, name_map


def test_defaults_exact_then_patterns_then_the_name_itself():
    """An exact entry; the two autograd patterns (the trailing digits of a node name dropped); a name no entry
    or pattern knows is its own canonical name. Asked twice: the same answer (remembered)."""
    m = name_map()
    for _ in range(2):
        assert m.operator("npu::npu_rms_norm") == "aten::rms_norm"
        assert m.operator("MmBackward0") == "MmBackward"
        assert m.operator("autograd::engine::evaluate_function: AddmmBackward12") == \
            "autograd::engine::evaluate_function: AddmmBackward"
        assert m.operator("aten::mm") == "aten::mm"
    assert m.kernel("ampere_sgemm_128x64_tn") == "ampere_sgemm_128x64_tn"  # no kernel entry by default


def test_user_entries_come_before_the_defaults():
    """The user's exact operator overrides the default one (the other defaults stay); the user's pattern
    is tried before the defaults' (so MmBackward0 becomes Mm_bwd, not MmBackward); an exact entry beats
    every pattern; the user's kernel entry maps its name and no other."""
    m = name_map({"version": 1, "operators": {"npu::npu_rms_norm": "mine", "MmBackward3": "exact"},
                  "operator_patterns": [["^(\\w+)Backward\\d+$", "\\1_bwd"]],
                  "kernels": {"MatMulV2": "gemm"}})
    assert m.operator("npu::npu_rms_norm") == "mine"
    assert m.operator("npu::npu_linear") == "aten::linear"
    assert m.operator("MmBackward0") == "Mm_bwd"
    assert m.operator("MmBackward3") == "exact"
    assert m.operator("autograd::engine::evaluate_function: MmBackward0") == \
        "autograd::engine::evaluate_function: MmBackward"  # the user's ^ does not match there: the default does
    assert (m.kernel("MatMulV2"), m.kernel("MatMulV3")) == ("gemm", "MatMulV3")


def test_user_operator_patterns_are_case_sensitive_and_family_patterns_are_not():
    """docs/http_api.md: operator patterns as written; kernel family patterns case-insensitive."""
    m = name_map({"operator_patterns": [["^ATEN::MM$", "x"]], "kernel_families": [["^flash", "my attention"]]})
    assert m.operator("aten::mm") == "aten::mm" and m.operator("ATEN::MM") == "x"
    assert m.family("FlashAttentionScore") == "my attention"


def test_a_users_family_comes_first_then_the_vendors_tokens():
    """User families [gemm -> mine, conv -> convs]: a GEMM kernel is "mine" (by the defaults: matmul), a
    convolution "convs"; a name neither user pattern finds gets the defaults' family; a name with no known
    token "other". user_families counts the user's two. Asked twice: the same (remembered)."""
    m = name_map({"kernel_families": [["gemm", "mine"], ["conv", "convs"]]})
    assert m.user_families == 2
    for _ in range(2):
        assert m.family("ampere_sgemm_128x64_nn") == "mine"
        assert m.family("implicit_convolve_sgemm") == "mine"  # the first user pattern that matches wins
        assert m.family("Conv2D1") == "convs"
        assert m.family("vectorized_elementwise_kernel") == "elementwise"
        assert m.family("zzz_unknown") == "other"
    assert name_map().user_families == 0


def test_family_of_a_kernel_user_pattern_then_the_digests_family_then_the_name():
    """family_of: a user pattern on the name wins over the digest's family; without one the digest's family
    stands (even against the name's tokens); without that (empty or no field), the name's tokens."""
    m = name_map({"kernel_families": [["^mykern", "mine"]]})
    K = SimpleNamespace
    assert m.family_of(K(name="mykern_gemm", family="matmul")) == "mine"
    assert m.family_of(K(name="ampere_sgemm_128x64_nn", family="attention")) == "attention"
    assert m.family_of(K(name="ampere_sgemm_128x64_nn", family="")) == "matmul"
    assert m.family_of(K(name="ampere_sgemm_128x64_nn")) == "matmul"


def test_default_family_is_the_earliest_family_over_the_tokens():
    """FAMILY_ORDER: communication, attention, convolution, matmul, ..., elementwise. A name with an elementwise
    and a matmul token is matmul; flash + gemm is attention; nccl + gemm communication; the last family,
    elementwise, on its own; no token of any family: other."""
    assert default_family("relu_gemm") == "matmul"
    assert default_family("gemm_relu") == "matmul"
    assert default_family("flash_fwd_gemm") == "attention"
    assert default_family("nccl_gemm_relu") == "communication"
    assert default_family("relu") == "elementwise"
    assert default_family("zzz") == "other"


def test_token_pattern_matches_whole_tokens_in_any_case():
    """TokenPattern: a whole token of the name (lower case), the pattern any case: "sgemm" is a token of
    ampere_sgemm_128x64_nn, "gemm" is not (a piece of one); "lamb" is not in lambda."""
    assert TokenPattern("SGEMM").search("ampere_sgemm_128x64_nn")
    assert TokenPattern("sgemm").search("ampere_sgemm_128x64_nn")
    assert not TokenPattern("gemm").search("ampere_sgemm_128x64_nn")
    assert not TokenPattern("lamb").search("{lambda(int)#1}")
    assert TokenPattern("x").pattern == "x"


@pytest.mark.parametrize("user, message", [
    ("x", "the name map must be a JSON object"),
    ({"operater": {}, "colour": 1, "version": 1}, "unknown keys: colour, operater"),
    ({"operators": [["a", "b"]]}, "'operators' must be an object of string -> string"),
    ({"kernels": {"a": 1}}, "'kernels' must be an object of string -> string"),
    ({"kernels": {1: "a"}}, "'kernels' must be an object of string -> string"),
    ({"operator_patterns": {"a": "b"}}, "'operator_patterns' must be a list of \\[string, string\\] pairs"),
    ({"operator_patterns": [["a", "b", "c"]]}, "'operator_patterns' must be a list of"),
    ({"operator_patterns": [["a"]]}, "'operator_patterns' must be a list of"),
    ({"operator_patterns": [("a", "b")]}, "'operator_patterns' must be a list of"),
    ({"operator_patterns": [["a", "b"], ["a", 1]]}, "'operator_patterns' must be a list of"),
    ({"kernel_families": [[1, "b"]]}, "'kernel_families' must be a list of"),
    ({"operator_patterns": [["(", "x"]]},
     "'operator_patterns': bad regular expression '\\(': missing \\): \\( \\(RE2 syntax: no back-references"),
    ({"kernel_families": [["a)", "f"]]}, "'kernel_families': bad regular expression 'a\\)'"),
])
def test_bad_maps_are_refused_with_their_problem(user, message):
    with pytest.raises(NameMapError, match=f"^{message}"):
        name_map(user)


def test_an_empty_or_missing_map_is_the_defaults():
    for user in (None, {}, []):
        m = name_map(user)
        assert m.operator("npu::npu_linear") == "aten::linear" and m.user_families == 0 and m.kernels == {}


def test_a_bad_pattern_writes_nothing_to_stderr(capfd):
    """RE2's own error log is off: the refusal is the map's problem, not a line on the viewer's stderr."""
    with pytest.raises(NameMapError):
        name_map({"operator_patterns": [["(", "x"]]})
    assert capfd.readouterr().err == ""


def test_pattern_length_limit_at_its_edge():
    """1000 characters are accepted, 1001 refused with both numbers."""
    assert name_map({"operator_patterns": [["a" * 1000, "x"]]}).operator("a" * 1000) == "x"
    with pytest.raises(NameMapError, match=r"^'kernel_families': a pattern of 1001 characters \(at most 1000\)$"):
        name_map({"kernel_families": [["a" * 1001, "f"]]})


def test_pattern_count_limit_over_both_lists():
    """256 patterns in all are accepted (200 operator + 56 family), 257 refused, counted over both lists."""
    ops = [[f"^op{i}$", "x"] for i in range(200)]
    families = [[f"k{i}", "f"] for i in range(56)]
    assert name_map({"operator_patterns": ops, "kernel_families": families}).user_families == 56
    with pytest.raises(NameMapError, match=r"^257 patterns \(at most 256\)$"):
        name_map({"operator_patterns": ops, "kernel_families": [[f"k{i}", "f"] for i in range(57)]})


def test_without_re2_user_patterns_are_refused(monkeypatch):
    monkeypatch.setattr(N, "re2", None)
    with pytest.raises(NameMapError, match=r"^'operator_patterns': patterns need the google-re2 package"):
        name_map({"operator_patterns": [["a", "b"]]})
    assert name_map({"operators": {"a": "b"}}).operator("a") == "b"  # no pattern: no need of RE2


@pytest.mark.parametrize("pattern, replacement, name, canonical", [
    ("^(a)(b)$", "\\2\\1", "ab", "ba"), ("^(a)$", "\\1x", "a", "ax"), ("^(?P<x>a)$", "\\g<x>y", "a", "ay"),
    ("^(a)$", "\\g<1>z", "a", "az"), ("^a$", "plain", "a", "plain"),
])
def test_a_replacement_may_name_its_patterns_groups(pattern, replacement, name, canonical):
    """Groups by number up to the pattern's count (\\N or \\g<N>), by name the pattern's names."""
    assert name_map({"operator_patterns": [[pattern, replacement]]}).operator(name) == canonical


@pytest.mark.parametrize("pattern, replacement", [
    ("^(a)(b)$", "\\3"), ("^(?P<x>a)$", "\\g<y>"), ("^(a)$", "\\g<2>"), ("^a$", "\\1"),
])
def test_a_replacement_naming_another_group_is_refused(pattern, replacement):
    with pytest.raises(NameMapError, match=r"^'operator_patterns': replacement .* names group .*, which its "
                                           r"pattern does not have \(\d groups\)$"):
        name_map({"operator_patterns": [[pattern, replacement]]})


def test_the_replacements_message_names_the_group_and_the_count():
    with pytest.raises(NameMapError, match=r"^'operator_patterns': replacement '\\\\3' names group 3, which its "
                                           r"pattern does not have \(2 groups\)$"):
        name_map({"operator_patterns": [["^(a)(b)$", "\\3"]]})
    with pytest.raises(NameMapError, match=r"names group y, "):
        name_map({"operator_patterns": [["^(?P<x>a)$", "\\g<y>"]]})


def test_a_long_bad_pattern_or_replacement_is_quoted_to_80_characters():
    """The message quotes the first 80 characters: "(" and 79 a's of a 101-character pattern; the 3-character
    \\9 reference... of a 103-character replacement, as \\9 and 78 y's (repr doubles the backslash)."""
    with pytest.raises(NameMapError) as bad:
        name_map({"operator_patterns": [["(" + "a" * 100, "x"]]})
    assert f"bad regular expression {'(' + 'a' * 79!r}: " in str(bad.value)
    with pytest.raises(NameMapError) as bad:
        name_map({"operator_patterns": [["^(a)$", "\\9" + "y" * 100]]})
    shown = "\\9" + "y" * 78
    assert f"replacement {shown!r} names group 9, " in str(bad.value)
