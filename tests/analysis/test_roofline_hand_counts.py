"""The FLOPs / bytes models on the shapes real training gives them, every number worked out here by hand
from what the operator computes (never from the models): linear on a 3-D input, matmul / bmm with batch
dims, grouped and depthwise convolutions (forward and backward), attention forward and backward with a
causal mask and GQA, and each dtype's element size. Inputs are written as the Kineto reader writes them:
the shapes column (Input Dims) and the args column (types, Concrete Inputs; ingest/op_args.py)."""
import pytest

from canning_tb.analysis.efficiency.inputs import parse
from canning_tb.analysis.efficiency.registry import work_of
from canning_tb.ingest.op_args import encode

BF16, FP16, FP32 = "c10::BFloat16", "c10::Half", "float"


def op(name, shapes, types, concrete=None):
    return work_of(parse(name, str(shapes), encode(types=types, concrete=concrete)))


def test_linear_on_a_3d_input_has_m_batch_times_tokens():
    # x[B=4, T=512, K=1024] @ W[N=4096, K]^T + b[N]: M = B x T = 2048 rows, not B = 4
    w = op("aten::linear", [[4, 512, 1024], [4096, 1024], [4096]], [BF16] * 3)
    assert w.flops == 2 * 2048 * 4096 * 1024
    # read x, W, b; write y[4, 512, 4096]; 2 bytes each
    assert w.bytes == (4 * 512 * 1024 + 4096 * 1024 + 4096 + 4 * 512 * 4096) * 2
    assert (w.dtype, w.model, w.matrix) == ("bf16", "matmul", True)


def test_matmul_keeps_its_batch_dims_and_broadcasts_them():
    # [8, 16, 128, 64] @ [8, 16, 64, 256]: 8 x 16 = 128 matrices of 128 x 256 x 64
    w = op("aten::matmul", [[8, 16, 128, 64], [8, 16, 64, 256]], [FP32] * 2)
    assert w.flops == 2 * 128 * 128 * 256 * 64
    assert w.bytes == (8 * 16 * 128 * 64 + 8 * 16 * 64 * 256 + 8 * 16 * 128 * 256) * 4
    # [8, 1, 128, 64] @ [16, 64, 256]: batch dims broadcast to [8, 16]; each operand read as it is
    w = op("aten::matmul", [[8, 1, 128, 64], [16, 64, 256]], [FP16] * 2)
    assert w.flops == 2 * (8 * 16) * 128 * 256 * 64
    assert w.bytes == (8 * 128 * 64 + 16 * 64 * 256 + 8 * 16 * 128 * 256) * 2
    # batch dims that do not broadcast (3 vs 5): not modelled
    assert op("aten::matmul", [[3, 128, 64], [5, 64, 256]], [FP16] * 2) is None


def test_bmm_counts_every_matrix_of_the_batch():
    # attention scores: [32, 2048, 128] @ [32, 128, 2048]
    w = op("aten::bmm", [[32, 2048, 128], [32, 128, 2048]], [FP16] * 2)
    assert w.flops == 2 * 32 * 2048 * 2048 * 128
    assert w.bytes == (2 * 32 * 2048 * 128 + 32 * 2048 * 2048) * 2


CONV_TYPES = [FP32, FP32, FP32, "ScalarList", "ScalarList", "ScalarList", "Scalar"]


def test_grouped_conv_divides_by_groups():
    # conv2d(x[8, 64, 56, 56], W[128, 64 / 4 = 16, 3, 3], b[128], stride 1, pad 1, dil 1, groups 4): 56 x 56 out;
    # each output element sums C_in / groups x 3 x 3 = 144 products, not 64 x 9 (nor 64 x 9 x 4)
    w = op("aten::conv2d", [[8, 64, 56, 56], [128, 16, 3, 3], [128], [], [], [], []], CONV_TYPES,
           ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "4"])
    macs = 8 * 128 * 56 * 56 * 16 * 9
    assert w.flops == 2 * macs
    assert w.bytes == (8 * 64 * 56 * 56 + 128 * 16 * 9 + 128 + 8 * 128 * 56 * 56) * 4


def test_depthwise_conv_with_stride():
    # depthwise: x[8, 256, 28, 28], W[256, 1, 3, 3], groups 256, stride 2, pad 1: out (28 + 2 - 2 - 1) // 2 + 1 = 14;
    # one product per kernel tap: 9 MACs per output element; no bias
    types = [FP32, FP32, "", "ScalarList", "ScalarList", "ScalarList", "Scalar"]
    w = op("aten::conv2d", [[8, 256, 28, 28], [256, 1, 3, 3], [], [], [], [], []], types,
           ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "256"])
    assert w.flops == 2 * 8 * 256 * 14 * 14 * 9
    assert w.bytes == (8 * 256 * 28 * 28 + 256 * 9 + 8 * 256 * 14 * 14) * 4


def test_grouped_conv_backward_both_gradients():
    # the grouped conv above, backward: input and weight gradients each do the forward's multiply-adds
    shapes = [[8, 128, 56, 56], [8, 64, 56, 56], [128, 16, 3, 3], [], [], [], [], [], [], [], []]
    types = [FP32] * 3 + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"]
    concrete = ["", "", "", "[128]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "4", "[True, True, False]"]
    w = op("aten::convolution_backward", shapes, types, concrete)
    assert w.flops == 2 * 2 * (8 * 128 * 56 * 56 * 16 * 9)


def _causal_pairs(b, h, n):
    # query i sees keys 0..i: 1 + 2 + ... + n = n (n + 1) / 2 pairs per head
    return b * h * n * (n + 1) // 2


SDPA_TYPES = [BF16] * 3 + ["", "Double", "Bool", "", "Bool"]


def test_sdpa_forward_causal_gqa():
    # Llama-like: q[2, 32 heads, 1024, 128], k / v[2, 8 kv heads, 1024, 128]; FLOPs follow the 32 query heads
    shapes = [[2, 32, 1024, 128], [2, 8, 1024, 128], [2, 8, 1024, 128], [], [], [], [], []]
    causal = op("aten::scaled_dot_product_attention", shapes, SDPA_TYPES, ["", "", "", "", "0.", "True", "", "True"])
    pairs = _causal_pairs(2, 32, 1024)
    assert causal.flops == 2 * pairs * (128 + 128)  # Q K^T and P V
    # read q, k, v, write out[2, 32, 1024, 128]; the scores never reach memory
    assert causal.bytes == (2 * 32 * 1024 * 128 + 2 * (2 * 8 * 1024 * 128) + 2 * 32 * 1024 * 128) * 2
    full = op("aten::scaled_dot_product_attention", shapes, SDPA_TYPES, ["", "", "", "", "0.", "False", "", "True"])
    assert full.flops == 2 * (2 * 32 * 1024 * 1024) * (128 + 128)


def test_flash_attention_forward_and_backward_causal():
    b, h, n, e = 4, 16, 2048, 64
    q = [b, h, n, e]
    # _scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal, return_debug_mask, scale)
    fwd = op("aten::_scaled_dot_product_flash_attention", [q, q, q, [], [], [], []],
             [FP16] * 3 + ["Double", "Bool", "Bool", ""], ["", "", "", "0.", "True", "False", ""])
    pairs = _causal_pairs(b, h, n)
    assert fwd.flops == 2 * pairs * (e + e)
    # backward(grad_out, query, key, value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
    # is_causal, philox_seed, philox_offset, scale): S = Q K^T recomputed (E), dV = P^T dO (Ev), dP = dO V^T (Ev),
    # dQ = dS K (E), dK = dS^T Q (E): 2 x pairs x (3 E + 2 Ev)
    shapes = [q, q, q, q, q, [b, h, n], [], [], [], [], [], [], [], [], []]
    types = [FP16] * 5 + [FP32, "", "", "Int", "Int", "Double", "Bool", "", "", ""]
    concrete = [""] * 8 + [str(n), str(n), "0.", "True", "", "", ""]
    bwd = op("aten::_scaled_dot_product_flash_attention_backward", shapes, types, concrete)
    assert bwd.flops == 2 * pairs * (3 * e + 2 * e)
    qkv = 3 * b * h * n * e * 2
    # read grad_out, q, k, v, out (fp16) and the fp32 log-sum-exp[b, h, n]; write dq, dk, dv
    assert bwd.bytes == qkv + 2 * b * h * n * e * 2 + b * h * n * 4 + qkv
    assert bwd.flops == 2.5 * fwd.flops  # (3 E + 2 Ev) / (E + Ev) with E = Ev


@pytest.mark.parametrize("dtype, size, peak", [
    # Kineto's names (caffe2 TypeMeta)
    (BF16, 2, "bf16"), (FP16, 2, "fp16"), (FP32, 4, "fp32"), ("double", 8, "fp64"), ("signed char", 1, "int8"),
    ("c10::Float8_e4m3fn", 1, "fp8"), ("c10::Float8_e5m2", 1, "fp8"),
    # torch_npu's kernel tables (CANN's names)
    ("DT_BF16", 2, "bf16"), ("FLOAT16", 2, "fp16"), ("FLOAT", 4, "fp32"), ("INT8", 1, "int8"), ("HIFLOAT8", 1, "fp8"),
])
def test_each_dtype_moves_its_own_bytes(dtype, size, peak):
    # mm(A[64, 32], B[32, 16]) -> C[64, 16]: 64 x 32 + 32 x 16 + 64 x 16 = 3584 elements
    w = op("aten::mm", [[64, 32], [32, 16]], [dtype] * 2)
    assert w.flops == 2 * 64 * 16 * 32
    assert w.bytes == 3584 * size
    assert w.dtype == peak


def test_an_unknown_dtype_has_no_bytes():
    assert op("aten::mm", [[64, 32], [32, 16]], ["c10::qint4x2"] * 2).bytes is None
