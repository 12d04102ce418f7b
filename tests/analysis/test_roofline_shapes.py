"""The models the fixtures have no call of, on the shapes real LLM training runs give them, counted by
hand: batched and NZ-format NPU matmuls, GroupedMatmul (MoE), FlashAttentionScore and its Grad
(BSND, GQA), SDPA with GQA and a causal mask longer than the queries, convolution_backward with its
output mask, and the refusals (a masked NPU attention, a K that does not fit): "–", never a guess.
The inputs are written as the readers write them (ingest/op_args.py)."""
from canning_tb.analysis.efficiency.inputs import parse
from canning_tb.analysis.efficiency.registry import work_of
from canning_tb.ingest.op_args import encode


def kernel(op_type, shapes, types, outs, out_types, formats=None):
    args = encode(op_type=op_type, types=types, out_shapes=outs, out_types=out_types, formats=formats)
    return work_of(parse(op_type + "_0", str(shapes), args))


def test_batch_matmul_and_nz():
    # Llama-7B attention scores on the NPU: [32 heads, 2048, 128] x [32, 128, 2048]
    w = kernel("BatchMatMulV2", [[32, 2048, 128], [32, 128, 2048]], ["BF16", "BF16"], [[32, 2048, 2048]], ["BF16"])
    assert w.flops == 2 * 32 * 2048 * 2048 * 128 and w.bytes == (2 * 32 * 2048 * 128 + 32 * 2048 * 2048) * 2
    assert w.dtype == "bf16" and w.matrix
    # the same 4096 x 4096 weight in FRACTAL_NZ [N1, M1, M0, N0] = [256, 8, 16, 16] against x[128, 4096]
    w = kernel("MatMulV2", [[128, 4096], [256, 256, 16, 16]], ["FLOAT16", "FLOAT16"], [[128, 4096]], ["FLOAT16"],
               ["ND", "FRACTAL_NZ"])
    assert w.flops == 2 * 128 * 4096 * 4096
    # a K that does not fit either operand: bytes only, no FLOPs
    w = kernel("MatMulV2", [[128, 4096], [4000, 4096]], ["FLOAT16", "FLOAT16"], [[128, 4096]], ["FLOAT16"])
    assert w.flops is None and w.bytes == (128 * 4096 + 4000 * 4096 + 128 * 4096) * 2


def test_grouped_matmul():
    # MoE: 8192 routed tokens of 4096 through 8 experts' [4096, 14336] weights
    w = kernel("GroupedMatmul", [[8192, 4096], [8, 4096, 14336], [8]], ["BF16", "BF16", "INT64"], [[8192, 14336]],
               ["BF16"])
    assert w.flops == 2 * 8192 * 4096 * 14336


def test_flash_attention_score_bsnd_gqa():
    b, s, n, n_kv, d = 2, 4096, 32, 8, 128
    outs = [[b, n, s, 8], [b, n, s, 8], [0], [b, s, n, d]]  # softmax_max, softmax_sum, softmax_out, attention_out
    w = kernel("FlashAttentionScore", [[b, s, n, d], [b, s, n_kv, d], [b, s, n_kv, d]], ["BF16"] * 3, outs,
               ["FLOAT", "FLOAT", "BF16", "BF16"])
    assert w.flops == 2 * b * n * s * s * (d + d) and w.model == "attention"
    grad = kernel("FlashAttentionScoreGrad", [[b, s, n, d], [b, s, n_kv, d], [b, s, n_kv, d], [b, s, n, d],
                                              [b, n, s, 8], [b, n, s, 8], [0], [b, s, n, d]],
                  ["BF16"] * 4 + ["FLOAT", "FLOAT", "BF16", "BF16"], [[b, s, n, d], [b, s, n_kv, d], [b, s, n_kv, d]],
                  ["BF16"] * 3)
    assert grad.flops == 2 * b * n * s * s * (3 * d + 2 * d)
    # with an attention mask (causal or band, the sparse mode not in the tables): not modelled
    masked = kernel("FlashAttentionScore", [[b, s, n, d], [b, s, n_kv, d], [b, s, n_kv, d], [2048, 2048]],
                    ["BF16"] * 3 + ["BOOL"], outs, ["FLOAT", "FLOAT", "BF16", "BF16"])
    assert masked.flops is None


def test_sdpa_gqa_causal_longer_keys():
    # 4 query heads over 2 key heads; 3 queries, 5 keys, causal (torch: top-left aligned, query i sees 0..i)
    args = encode(types=["c10::BFloat16"] * 3 + ["", "Scalar", "Scalar", "", "Scalar"],
                  concrete=["", "", "", "", "0.", "True", "", "True"])
    w = work_of(parse("aten::scaled_dot_product_attention", str([[1, 4, 3, 64], [1, 2, 5, 64], [1, 2, 5, 64]]), args))
    assert w.flops == 2 * 4 * (1 + 2 + 3) * (64 + 64) and w.dtype == "bf16"


def test_convolution_backward_output_mask():
    # ResNet-50's 3x3 conv of 128 channels at 28x28, batch 32: both gradients, then the weight's only
    shapes = str([[32, 128, 28, 28], [32, 128, 28, 28], [128, 128, 3, 3], [], [], [], [], [], [], [], []])
    concrete = ["", "", "", "[0]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    types = ["float"] * 3 + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"]
    macs = 32 * 128 * 28 * 28 * 128 * 9
    both = work_of(parse("aten::convolution_backward", shapes, encode(types=types, concrete=concrete + ["[True, True, False]"])))
    weight = work_of(parse("aten::convolution_backward", shapes, encode(types=types, concrete=concrete + ["[False, True, False]"])))
    assert both.flops == 2 * 2 * macs and weight.flops == 2 * macs
    # no output mask recorded (torch_npu, torch <= 2.2): not modelled
    assert work_of(parse("aten::convolution_backward", shapes, encode(types=types))) is None
