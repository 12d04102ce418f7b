"""The matrix models at the edges the mutation run of issue 46 found untested (docs/mutants.md), counted by
hand: matmul with a vector operand and with batch dims of different lengths, bmm's refusals, mv / addmv,
baddbmm, _scaled_mm, and NPU GroupedMatmul's bytes and refusals. Inputs as the readers write them
(ingest/op_args.py); a shape that does not fit is not modelled (None), never guessed."""
from canning_tb.analysis.efficiency.inputs import parse
from canning_tb.analysis.efficiency.registry import work_of
from canning_tb.ingest.op_args import encode

BF16, FP16, FP32 = "c10::BFloat16", "c10::Half", "float"


def op(name, shapes, types, concrete=None):
    return work_of(parse(name, str(shapes), encode(types=types, concrete=concrete)))


def kernel(op_type, shapes, types, outs, out_types):
    args = encode(op_type=op_type, types=types, out_shapes=outs, out_types=out_types)
    return work_of(parse(op_type + "_0", str(shapes), args))


def test_matmul_with_a_vector_operand():
    # v[64] @ B[64, 32]: a row vector, M = 1: 2 x 1 x 32 x 64 FLOPs; reads 64 + 2048, writes 32 (x 4 bytes)
    w = op("aten::matmul", [[64], [64, 32]], [FP32] * 2)
    assert (w.flops, w.bytes) == (2 * 32 * 64, (64 + 64 * 32 + 32) * 4)
    # A[8, 128, 64] @ v[64]: a column vector, N = 1, batch 8: 2 x 8 x 128 x 64; writes 8 x 128
    w = op("aten::matmul", [[8, 128, 64], [64]], [FP16] * 2)
    assert (w.flops, w.bytes) == (2 * 8 * 128 * 64, (8 * 128 * 64 + 64 + 8 * 128) * 2)
    # v[64] @ v[64]: a dot product, 2 x 64 FLOPs, one element written
    w = op("aten::matmul", [[64], [64]], [FP32] * 2)
    assert (w.flops, w.bytes) == (2 * 64, (64 + 64 + 1) * 4)
    # a vector whose length is not K: not modelled
    assert op("aten::matmul", [[48], [64, 32]], [FP32] * 2) is None
    assert op("aten::matmul", [[8, 128, 64], [48]], [FP32] * 2) is None


def test_matmul_batch_dims_of_different_lengths():
    # A[16, 128, 64] @ B[8, 16, 64, 256]: A's batch [16] broadcasts against B's [8, 16] to [8, 16]
    w = op("aten::matmul", [[16, 128, 64], [8, 16, 64, 256]], [BF16] * 2)
    assert w.flops == 2 * (8 * 16) * 128 * 256 * 64
    assert w.bytes == (16 * 128 * 64 + 8 * 16 * 64 * 256 + 8 * 16 * 128 * 256) * 2
    # A[128, 64] @ B[8, 64, 256]: a matrix against a batch of 8
    assert op("aten::matmul", [[128, 64], [8, 64, 256]], [BF16] * 2).flops == 2 * 8 * 128 * 256 * 64
    # B[4, 64, 256] against A[16, 128, 64]: 16 and 4 do not broadcast; a missing shape: not modelled
    assert op("aten::matmul", [[16, 128, 64], [4, 64, 256]], [BF16] * 2) is None
    assert op("aten::matmul", [[], [64, 256]], [BF16] * 2) is None
    assert op("aten::matmul", [[128, 64], []], [BF16] * 2) is None


def test_bmm_refuses_what_does_not_fit():
    ok = op("aten::bmm", [[4, 32, 16], [4, 16, 8]], [FP32] * 2)
    assert (ok.flops, ok.bytes) == (2 * 4 * 32 * 8 * 16, (4 * 32 * 16 + 4 * 16 * 8 + 4 * 32 * 8) * 4)
    assert op("aten::bmm", [[4, 32, 16], [2, 16, 8]], [FP32] * 2) is None  # batch 4 vs 2
    assert op("aten::bmm", [[4, 32, 16], [4, 12, 8]], [FP32] * 2) is None  # K 16 vs 12
    assert op("aten::bmm", [[32, 16], [4, 16, 8]], [FP32] * 2) is None  # A not 3-D
    assert op("aten::bmm", [[4, 32, 16], [16, 8]], [FP32] * 2) is None  # B not 3-D
    assert op("aten::bmm", [[4, 32, 16], []], [FP32] * 2) is None


def test_baddbmm_reads_self_too():
    # baddbmm(self[4, 32, 8], A[4, 32, 16], B[4, 16, 8]): the bmm's FLOPs (the add not counted), self read
    w = op("aten::baddbmm", [[4, 32, 8], [4, 32, 16], [4, 16, 8], [], []], [BF16] * 3 + ["Scalar", "Scalar"])
    assert w.flops == 2 * 4 * 32 * 8 * 16
    assert w.bytes == (4 * 32 * 8 + 4 * 32 * 16 + 4 * 16 * 8 + 4 * 32 * 8) * 2
    assert (w.dtype, w.model, w.matrix) == ("bf16", "matmul", True)


def test_mv_and_addmv():
    # mv(A[256, 64], v[64]): 2 x 256 x 64; reads A and v, writes y[256]
    w = op("aten::mv", [[256, 64], [64]], [FP32] * 2)
    assert (w.flops, w.bytes, w.matrix) == (2 * 256 * 64, (256 * 64 + 64 + 256) * 4, True)
    # addmv(self[256], A[256, 64], v[64]): self read too
    w = op("aten::addmv", [[256], [256, 64], [64], [], []], [FP16] * 3 + ["Scalar", "Scalar"])
    assert (w.flops, w.bytes) == (2 * 256 * 64, (256 + 256 * 64 + 64 + 256) * 2)
    assert op("aten::mv", [[256, 64], [32]], [FP32] * 2) is None  # v's length is not K
    assert op("aten::mv", [[256, 64], [64, 1]], [FP32] * 2) is None  # v not 1-D
    assert op("aten::mv", [[64], [64]], [FP32] * 2) is None  # A not 2-D


def test_scaled_mm_has_flops_and_unknown_bytes():
    # FP8 A[1024, 512] @ B[512, 2048] with their scales: the result's dtype is not recorded
    w = op("aten::_scaled_mm", [[1024, 512], [512, 2048], [], []],
           ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", FP32, FP32])
    assert (w.flops, w.bytes, w.dtype, w.matrix) == (2 * 1024 * 2048 * 512, None, "fp8", True)
    assert op("aten::_scaled_mm", [[1024, 512], [256, 2048], [], []], ["c10::Float8_e4m3fn"] * 2 + [FP32] * 2) is None


def test_grouped_matmul_bytes_and_refusals():
    # MoE: x[8192, 4096], 8 experts' weights [8, 4096, 14336] and group list [8] (int64); y[8192, 14336]
    w = kernel("GroupedMatmul", [[8192, 4096], [8, 4096, 14336], [8]], ["BF16", "BF16", "INT64"], [[8192, 14336]],
               ["BF16"])
    assert w.flops == 2 * 8192 * 14336 * 4096
    assert w.bytes == (8192 * 4096 + 8 * 4096 * 14336) * 2 + 8 * 8 + 8192 * 14336 * 2
    assert (w.dtype, w.matrix) == ("bf16", True)
    # weights stored transposed, [8, N, K]: the same FLOPs
    t = kernel("GroupedMatmul", [[8192, 4096], [8, 14336, 4096], [8]], ["BF16", "BF16", "INT64"], [[8192, 14336]],
               ["BF16"])
    assert t.flops == w.flops
    # no weight of (K, N) / (N, K); rows in and out that differ; two outputs; x not 2-D: no FLOPs, the
    # tensors' bytes only (every NPU kernel's)
    for shapes, outs in (([[8192, 4096], [8, 4000, 14336]], [[8192, 14336]]),
                         ([[8192, 4096], [8, 4096, 14336]], [[4096, 14336]]),
                         ([[8192, 4096], [8, 4096, 14336]], [[8192, 14336], [8192, 14336]]),
                         ([[2, 8192, 4096], [8, 4096, 14336]], [[8192, 14336]])):
        w = kernel("GroupedMatmul", shapes, ["BF16"] * 2, outs, ["BF16"] * len(outs))
        assert (w.flops, w.model, w.matrix) == (None, "tensors", False)


# -- convolutions: the backward's cases and the NPU's stored formats ------------------------------
BW_TYPES = [FP32] * 3 + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"]


def conv_backward(grad, inp, weight, transposed, mask, dtype=FP32):
    shapes = [grad, inp, weight, [], [], [], [], [], [], [], []]
    concrete = ["", "", "", f"[{weight[1]}]", "[1, 1]", "[1, 1]", "[1, 1]", transposed, "[0, 0]", "1", mask]
    return op("aten::convolution_backward", shapes, [dtype] * 3 + BW_TYPES[3:], concrete)


def test_conv_backward_gradients_by_the_output_mask():
    # conv2d x[4, 32, 28, 28] -> y[4, 64, 28, 28], W[64, 32, 3, 3]: 4 x 64 x 28 x 28 x 32 x 9 MACs per gradient
    g, i, w = [4, 64, 28, 28], [4, 32, 28, 28], [64, 32, 3, 3]
    macs = 4 * 64 * 28 * 28 * 32 * 9
    ng, ni, nw = 4 * 64 * 28 * 28, 4 * 32 * 28 * 28, 64 * 32 * 9
    # input gradient only: reads grad_out and W, writes grad_in
    only_input = conv_backward(g, i, w, "False", "[True, False, False]")
    assert (only_input.flops, only_input.bytes) == (2 * macs, (ng + nw + ni) * 4)
    # weight and bias gradients: reads grad_out and x, writes grad_W and grad_b[64]
    weight_bias = conv_backward(g, i, w, "False", "[False, True, True]")
    assert (weight_bias.flops, weight_bias.bytes) == (2 * macs, (ng + ni + nw + 64) * 4)
    both = conv_backward(g, i, w, "False", "[True, True, False]", dtype=BF16)
    assert (both.flops, both.bytes, both.dtype) == (2 * 2 * macs, (ng + nw + ni + ni + nw) * 2, "bf16")


def test_conv_transpose_backward_and_an_unrecorded_transposed_flag():
    # conv_transpose2d x[4, 64, 14, 14] -> y[4, 32, 28, 28], W[64 (C_in), 32 (C_out / groups), 4, 4]:
    # each input element meets 32 x 4 x 4 weights: 4 x 64 x 14 x 14 x 32 x 16 MACs per gradient
    g, i, w = [4, 32, 28, 28], [4, 64, 14, 14], [64, 32, 4, 4]
    macs = 4 * 64 * 14 * 14 * 32 * 16
    assert conv_backward(g, i, w, "True", "[True, True, False]").flops == 2 * 2 * macs
    # transposed not recorded: these shapes fit only a transposed convolution (W[0] = C_in 64, not C_out 32)
    assert conv_backward(g, i, w, "", "[True, False, False]").flops == 2 * macs
    # ... and a plain one's only a plain convolution
    plain = conv_backward([4, 64, 28, 28], [4, 32, 28, 28], [64, 32, 3, 3], "", "[True, False, False]")
    assert plain.flops == 2 * 4 * 64 * 28 * 28 * 32 * 9
    # shapes that fit both (C_in = C_out = 64, W[64, 64, 3, 3]) with the flag unknown: not modelled
    assert conv_backward([4, 64, 28, 28], [4, 64, 28, 28], [64, 64, 3, 3], "", "[True, True, False]") is None
    # the flag said, but the shapes fit the other case: not modelled
    assert conv_backward(g, i, w, "False", "[True, True, False]") is None
    assert conv_backward([4, 64, 28, 28], [4, 32, 28, 28], [64, 32, 3, 3], "True", "[True, True, False]") is None


def test_cudnn_backward_input_of_old_traces():
    # cudnn_convolution_backward_input(self_size, grad_output[4, 64, 28, 28], weight[64, 32, 3, 3], ...)
    w = op("aten::cudnn_convolution_backward_input", [[], [4, 64, 28, 28], [64, 32, 3, 3], [], [], [], [], [], []],
           ["", FP16, FP16] + ["ScalarList"] * 3 + ["Scalar"] * 3)
    assert (w.flops, w.bytes, w.dtype) == (2 * 4 * 64 * 28 * 28 * 32 * 9, None, "fp16")
    # the weight's C_out is not the gradient's channels: not modelled
    assert op("aten::cudnn_convolution_backward_input", [[], [4, 64, 28, 28], [32, 32, 3, 3]], ["", FP16, FP16]) is None
    assert op("aten::cudnn_convolution_backward_input", [[], [4, 64, 28], [64, 32, 3, 3]], ["", FP16, FP16]) is None


# NPU: activations NC1HWC0 [N, C1, H, W, C0 = 16], weights FRACTAL_Z [C1 x kh x kw, N1, N0 = 16, C0 = 16].
# conv 3x3, C_in 64 (C1 = 4), C_out 128 (N1 = 8), 16 x 16, N = 2: the cube's MACs are
# N x Ho x Wo x C_out x (C_in x kh x kw) = 2 x 16 x 16 x 128 x (4 x 9 x 16 = 576)
X5, Y5, FZ = [2, 4, 16, 16, 16], [2, 8, 16, 16, 16], [4 * 9, 8, 16, 16]
NPU_MACS = 2 * 16 * 16 * 128 * 576
N_X, N_Y, N_FZ = 2 * 4 * 16 * 16 * 16, 2 * 8 * 16 * 16 * 16, 36 * 8 * 16 * 16


def npu(op_type, shapes, types, formats, outs, out_types):
    args = encode(op_type=op_type, types=types, formats=formats, out_shapes=outs, out_types=out_types)
    return work_of(parse(op_type + "_7", str(shapes), args))


def test_npu_conv2d_and_its_gradients_as_stored():
    fwd = npu("Conv2D", [X5, FZ, [128]], ["FLOAT16", "FLOAT16", "FLOAT"], ["NC1HWC0", "FRACTAL_Z", "ND"], [Y5],
              ["FLOAT16"])
    assert (fwd.flops, fwd.model, fwd.dtype) == (2 * NPU_MACS, "conv", "fp16")
    assert fwd.bytes == (N_X + N_FZ) * 2 + 128 * 4 + N_Y * 2
    # dx = Conv2DBackpropInput(input_size[4] int32, filter, dy): the same MACs
    dx = npu("Conv2DBackpropInput", [[4], FZ, Y5], ["INT32", "FLOAT16", "FLOAT16"], ["ND", "FRACTAL_Z", "NC1HWC0"],
             [X5], ["FLOAT16"])
    assert (dx.flops, dx.bytes, dx.dtype) == (2 * NPU_MACS, 4 * 4 + (N_FZ + N_Y + N_X) * 2, "fp16")
    # dw = Conv2DBackpropFilter(x, filter_size[4] int32, dy) -> dw in FRACTAL_Z, the weight read from the output
    dw = npu("Conv2DBackpropFilter", [X5, [4], Y5], ["FLOAT16", "INT32", "FLOAT16"], ["NC1HWC0", "ND", "NC1HWC0"],
             [FZ], ["FLOAT"])
    assert (dw.flops, dw.bytes) == (2 * NPU_MACS, N_X * 2 + 4 * 4 + N_Y * 2 + N_FZ * 4)


def test_npu_conv_refusals_keep_the_bytes():
    def refused(w):
        return (w.flops, w.model, w.matrix) == (None, "tensors", False)

    # the weight not in FRACTAL_Z, or the activation not NC1HWC0
    assert refused(npu("Conv2D", [X5, FZ], ["FLOAT16"] * 2, ["NC1HWC0", "ND"], [Y5], ["FLOAT16"]))
    assert refused(npu("Conv2D", [X5, FZ], ["FLOAT16"] * 2, ["ND", "FRACTAL_Z"], [Y5], ["FLOAT16"]))
    assert refused(npu("Conv2DBackpropInput", [[4], FZ, Y5], ["INT32"] + ["FLOAT16"] * 2, ["ND", "ND", "NC1HWC0"],
                       [X5], ["FLOAT16"]))
    assert refused(npu("Conv2DBackpropFilter", [X5, [4], Y5], ["FLOAT16", "INT32", "FLOAT16"],
                       ["NC1HWC0", "ND", "ND"], [FZ], ["FLOAT"]))
    # C_out of the weight (8 x 16) is not the output's (4 x 16); a weight that is not 4-D; an output not 5-D
    assert refused(npu("Conv2D", [X5, FZ], ["FLOAT16"] * 2, ["NC1HWC0", "FRACTAL_Z"], [[2, 4, 16, 16, 16]],
                       ["FLOAT16"]))
    assert refused(npu("Conv2D", [X5, [36, 8, 256]], ["FLOAT16"] * 2, ["NC1HWC0", "FRACTAL_Z"], [Y5], ["FLOAT16"]))
    assert refused(npu("Conv2D", [X5, FZ], ["FLOAT16"] * 2, ["NC1HWC0", "FRACTAL_Z"], [[2, 128, 16, 16]],
                       ["FLOAT16"]))


def test_linear_and_cudnn_refusals_and_kinds():
    assert op("aten::linear", [[2, 16, 64], [192, 48], [192]], [FP32] * 3) is None  # K 64 vs 48
    assert op("aten::linear", [[2, 16, 64], [192], [192]], [FP32] * 3) is None  # weight not 2-D
    assert op("aten::linear", [[], [192, 64], [192]], [FP32] * 3) is None
    # conv1d's input gradient (3-D tensors) in an old trace: 4 x 64 x 100 x 32 x 5 MACs, a matrix unit of "conv"
    w = op("aten::cudnn_convolution_backward_input", [[], [4, 64, 100], [64, 32, 5]], ["", BF16, BF16])
    assert (w.flops, w.model, w.matrix, w.dtype) == (2 * 4 * 64 * 100 * 32 * 5, "conv", True, "bf16")
    s = op("aten::_scaled_mm", [[64, 32], [32, 16], [], []], ["c10::Float8_e5m2"] * 2 + [FP32] * 2)
    assert (s.model, s.matrix) == ("matmul", True)


# -- NPU FlashAttentionScore in each input layout ---------------------------------------------------
# B 2, N1 16 query heads, N2 4 key / value heads (GQA), S1 512 queries, S2 384 keys, D 64; no mask: every
# (query, key) pair: 2 x 16 x 512 x 384. Forward: 2 x pairs x (D + D); backward 2 x pairs x (3 D + 2 D).
B, N1, N2, S1, S2, D = 2, 16, 4, 512, 384, 64
PAIRS = B * N1 * S1 * S2
STATS = [B, N1, S1, 8]  # softmax_max / softmax_sum, FLOAT
LAYOUTS = {
    "BNSD": ([B, N1, S1, D], [B, N2, S2, D]),
    "BSND": ([B, S1, N1, D], [B, S2, N2, D]),
    "BSH": ([B, S1, N1 * D], [B, S2, N2 * D]),
    "SBH": ([S1, B, N1 * D], [S2, B, N2 * D]),
}


def flash(q, k, v=None, extra=(), extra_types=()):
    v = k if v is None else v
    outs = [STATS, STATS, [0], q]
    return npu("FlashAttentionScore", [q, k, v, *extra], ["BF16"] * 3 + list(extra_types), [""] * (3 + len(extra)),
               outs, ["FLOAT", "FLOAT", "BF16", "BF16"])


def test_flash_attention_score_in_every_layout():
    for layout, (q, k) in LAYOUTS.items():
        w = flash(q, k)
        assert (w.flops, w.model, w.matrix) == (2 * PAIRS * (D + D), "attention", True), layout
        n_q, n_kv = B * N1 * S1 * D, B * N2 * S2 * D
        # q, k, v read; softmax_max, softmax_sum (fp32), an empty softmax_out and the output written
        assert w.bytes == (n_q + 2 * n_kv) * 2 + 2 * (B * N1 * S1 * 8) * 4 + n_q * 2, layout
        grad = npu("FlashAttentionScoreGrad", [q, k, k, q, STATS, STATS, [0], q],
                   ["BF16"] * 4 + ["FLOAT", "FLOAT", "BF16", "BF16"], [""] * 8, [q, k, k], ["BF16"] * 3)
        assert grad.flops == 2 * PAIRS * (3 * D + 2 * D), layout


def test_flash_attention_score_refusals():
    def refused(w):
        return (w.flops, w.model) == (None, "tensors")

    q, k = LAYOUTS["BNSD"]
    assert refused(flash(q, [B, N2, S2, 32]))  # key's D 32, not the query's 64
    q, k = LAYOUTS["BSH"]
    assert refused(flash(q, [B, S2, 3 * D]))  # 3 key heads: 16 query heads are not a multiple of them
    assert refused(flash(q, [B, S2, 100]))  # a hidden size that is no whole number of heads
    # a BOOL / UINT8 mask of 2 dims or more after q, k, v (the sparse mode is not in the tables)
    for dtype in ("BOOL", "DT_BOOL", "UINT8"):
        assert refused(flash(*LAYOUTS["BSND"], extra=[[], [], [S1, S2]], extra_types=["", "", dtype]))
    # a 1-D BOOL input is no mask: modelled
    assert flash(*LAYOUTS["BSND"], extra=[[], [], [8]], extra_types=["", "", "BOOL"]).flops == 2 * PAIRS * 2 * D
    # a softmax_max that is not [B, N1, S1, 8] gives no B, N1, S1: not modelled
    q, k = LAYOUTS["BSND"]
    w = npu("FlashAttentionScore", [q, k, k], ["BF16"] * 3, [""] * 3, [[B, N1, S1], [B, N1, S1], [0], q],
            ["FLOAT", "FLOAT", "BF16", "BF16"])
    assert refused(w)


# -- NPU MatMul* edges: K from either operand's layout, batch dims, NZ formats, refusals --------------
def npu_mm(op_type, shapes, types, outs, out_types, formats=None, out_formats=None):
    args = encode(op_type=op_type, types=types, formats=formats, out_shapes=outs, out_types=out_types,
                  out_formats=out_formats)
    return work_of(parse(op_type + "_3", str(shapes), args))


def test_npu_matmul_shapes_by_hand():
    # decode: one row (M = 1) through a [4096, 4096] weight: 2 x 1 x 4096 x 4096
    w = npu_mm("MatMulV2", [[1, 4096], [4096, 4096]], ["BF16"] * 2, [[1, 4096]], ["BF16"])
    assert (w.flops, w.model, w.dtype) == (2 * 4096 * 4096, "matmul", "bf16")
    # x1 stored transposed, [b, K = 40, M = 24] against [b, K, N = 56]: K found as x1's elements / M
    w = npu_mm("BatchMatMulV2", [[4, 40, 24], [4, 40, 56]], ["FLOAT16"] * 2, [[4, 24, 56]], ["FLOAT16"])
    assert w.flops == 2 * 4 * 24 * 56 * 40
    # N != M in a batch: out [32, 2048, 1024] from [32, 2048, 128] x [32, 128, 1024]
    w = npu_mm("BatchMatMulV3", [[32, 2048, 128], [32, 128, 1024]], ["BF16"] * 2, [[32, 2048, 1024]], ["BF16"])
    assert w.flops == 2 * 32 * 2048 * 1024 * 128
    assert w.bytes == (32 * 2048 * 128 + 32 * 128 * 1024 + 32 * 2048 * 1024) * 2
    # 4-D ND operands (not NZ, whatever their rank): [2, 8, 128, 64] x [8, 64, 256] -> [2, 8, 128, 256]
    w = npu_mm("BatchMatMulV2", [[2, 8, 128, 64], [8, 64, 256]], ["FLOAT"] * 2, [[2, 8, 128, 256]], ["FLOAT"],
               formats=["ND", "ND"], out_formats=["ND"])
    assert w.flops == 2 * 2 * 8 * 128 * 256 * 64
    w = npu_mm("BatchMatMulV2", [[8, 128, 64], [2, 8, 64, 256]], ["FLOAT"] * 2, [[2, 8, 128, 256]], ["FLOAT"])
    assert w.flops == 2 * 2 * 8 * 128 * 256 * 64
    # x1 in FRACTAL_NZ [K1 = 4, M1 = 8, M0 = 16, K0 = 16] = [128, 64] against an ND [64, 256]; the output in NZ
    # [N1 = 16, M1 = 8, 16, 16] = [128, 256]
    w = npu_mm("MatMulV2", [[4, 8, 16, 16], [64, 256]], ["FLOAT16"] * 2, [[16, 8, 16, 16]], ["FLOAT16"],
               formats=["FRACTAL_NZ", "ND"], out_formats=["FRACTAL_NZ"])
    assert w.flops == 2 * 128 * 256 * 64


def test_npu_matmul_refusals():
    def refused(w):
        return (w.flops, w.model) == (None, "tensors")

    # M = 64 does not divide x1 [128, 4096] into one of its dims (128 x 4096 / 64 = 8192): no K
    assert refused(npu_mm("MatMulV2", [[128, 4096], [4096, 256]], ["FLOAT16"] * 2, [[64, 128]], ["FLOAT16"]))
    # batch dims that do not broadcast (3 vs 5), or that broadcast to other than the output's
    assert refused(npu_mm("BatchMatMulV2", [[3, 128, 64], [5, 64, 256]], ["FLOAT16"] * 2, [[3, 128, 256]],
                          ["FLOAT16"]))
    assert refused(npu_mm("BatchMatMulV2", [[2, 128, 64], [2, 64, 256]], ["FLOAT16"] * 2, [[4, 128, 256]],
                          ["FLOAT16"]))
    # an operand of one dim, a missing operand, an output of one dim
    assert refused(npu_mm("MatMulV2", [[128, 64], [64]], ["FLOAT16"] * 2, [[128, 1]], ["FLOAT16"]))
    assert refused(npu_mm("MatMulV2", [[64], [64, 256]], ["FLOAT16"] * 2, [[1, 256]], ["FLOAT16"]))
    assert refused(npu_mm("MatMulV2", [[128, 64]], ["FLOAT16"], [[128, 256]], ["FLOAT16"]))
    assert refused(npu_mm("MatMulV2", [[128, 64], [64, 256]], ["FLOAT16"] * 2, [[256]], ["FLOAT16"]))
    assert npu_mm("MatMulV2", [[128, 64], [64, 256]], ["FLOAT16"] * 2, [], []) is None  # no output: no model at all


def test_grouped_matmul_single_weight_and_quantized_weights():
    # one expert's weight as a 2-D [K, N]; int8 weights (W8A16) under bf16 activations: the cube runs bf16
    w = kernel("GroupedMatmul", [[512, 1024], [1024, 2048]], ["BF16", "INT8"], [[512, 2048]], ["BF16"])
    assert (w.flops, w.model, w.dtype) == (2 * 512 * 2048 * 1024, "matmul", "bf16")
    assert w.bytes == 512 * 1024 * 2 + 1024 * 2048 * 1 + 512 * 2048 * 2
    # an output of 3 dims: not modelled
    w = kernel("GroupedMatmul", [[512, 1024], [1024, 2048]], ["BF16"] * 2, [[1, 512, 2048]], ["BF16"])
    assert (w.flops, w.model) == (None, "tensors")


def test_mm_needs_two_matrices_and_an_unknown_dtype_has_no_class():
    assert op("aten::mm", [[128, 64], [64, 32, 2]], [FP32] * 2) is None
    assert op("aten::mm", [[128, 64], [64]], [FP32] * 2) is None
    assert op("aten::mm", [[128], [128, 64]], [FP32] * 2) is None
    assert op("aten::bmm", [[4, 32, 16]], [FP32]) is None  # B not recorded
    w = op("aten::mm", [[64, 32], [32, 16]], ["c10::qint4x2"] * 2)
    assert (w.flops, w.bytes, w.dtype) == (2 * 64 * 16 * 32, None, "")


def test_flash_attention_mqa_missing_layout_and_grad_stats():
    # one key / value head for the 16 query heads (MQA), BSH: N2 = 64 / 64 = 1
    q = [B, S1, N1 * D]
    assert flash(q, [B, S2, D]).flops == 2 * PAIRS * (D + D)
    # a query that fits no layout of softmax_max's B, N1, S1: not modelled
    w = flash([B, 100, N1, D], LAYOUTS["BSND"][1])
    assert (w.flops, w.model) == (None, "tensors")
    # the Grad's softmax_max is its first FLOAT [B, N1, S1, 8] input after q, k, v, whatever the spelling
    q, k = LAYOUTS["BNSD"]
    for f32 in ("FLOAT", "FLOAT32", "DT_FLOAT"):
        g = npu("FlashAttentionScoreGrad", [q, k, k, q, STATS, STATS], ["BF16"] * 4 + [f32, f32], [""] * 6,
                [q, k, k], ["BF16"] * 3)
        assert g.flops == 2 * PAIRS * 5 * D, f32
    # an fp32 attention: q, k, v and dy are FLOAT too, yet only the [.., 8] input is softmax_max (BSND: a query
    # taken for it would give other B, N1, S1)
    q, k = LAYOUTS["BSND"]
    g = npu("FlashAttentionScoreGrad", [q, k, k, q, STATS, STATS], ["FLOAT"] * 6, [""] * 6, [q, k, k], ["FLOAT"] * 3)
    assert (g.flops, g.dtype) == (2 * PAIRS * 5 * D, "fp32")
    # no softmax_max among the inputs: not modelled
    g = npu("FlashAttentionScoreGrad", [q, k, k, q], ["BF16"] * 4, [""] * 4, [q, k, k], ["BF16"] * 3)
    assert (g.flops, g.model) == (None, "tensors")
    # BSND with the key's D not the query's
    w = flash(LAYOUTS["BSND"][0], [B, S2, N2, 32])
    assert (w.flops, w.model) == (None, "tensors")


SDPA = "aten::scaled_dot_product_attention"
SDPA_T = ["", "Double", "Bool", "", "Bool"]


def sdpa(shapes, dtype=BF16, causal="False", mask_type=""):
    # scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    types = [dtype] * 3 + [mask_type] + SDPA_T[1:]
    return op(SDPA, [*shapes, *([[]] * (8 - len(shapes)))], types, ["", "", "", "", "0.", causal, "", "True"])


def test_sdpa_shapes_by_hand():
    # more queries than keys, causal (top left): query i sees min(i + 1, 3) keys: 1 + 2 + 3 + 3 + 3 = 12 per head
    w = sdpa([[1, 2, 5, 16], [1, 2, 3, 16], [1, 2, 3, 16]], causal="True")
    assert (w.flops, w.model, w.matrix) == (2 * 2 * 12 * (16 + 16), "attention", True)
    # no batch dim ([H, L, E]) and two batch dims ([2, 3, H, L, E]): the lead dims multiply
    assert sdpa([[4, 16, 64], [4, 32, 64], [4, 32, 64]]).flops == 2 * (4 * 16 * 32) * 128
    w = sdpa([[2, 3, 4, 16, 64], [2, 3, 4, 32, 64], [2, 3, 4, 32, 64]])
    assert w.flops == 2 * (6 * 4 * 16 * 32) * 128
    assert w.bytes == (6 * 4 * 16 * 64 + 2 * 6 * 4 * 32 * 64 + 6 * 4 * 16 * 64) * 2
    # MQA: one key / value head
    assert sdpa([[2, 8, 16, 64], [2, 1, 32, 64], [2, 1, 32, 64]]).flops == 2 * (2 * 8 * 16 * 32) * 128
    # a value head dim Ev = 32 unlike E = 64 (as in MLA): Q K^T over E, P V over Ev; the output [.., L, Ev]
    w = sdpa([[2, 8, 16, 64], [2, 8, 32, 64], [2, 8, 32, 32]])
    assert w.flops == 2 * (2 * 8 * 16 * 32) * (64 + 32)
    assert w.bytes == (2 * 8 * 16 * 64 + 2 * 8 * 32 * 64 + 2 * 8 * 32 * 32 + 2 * 8 * 16 * 32) * 2
    # unknown dtype: FLOPs known, bytes unknown
    w = sdpa([[2, 8, 16, 64], [2, 8, 32, 64], [2, 8, 32, 64]], dtype="c10::qint8")
    assert w.flops == 2 * (2 * 8 * 16 * 32) * 128 and w.bytes is None


def test_sdpa_refusals():
    ok = [[2, 8, 16, 64], [2, 8, 32, 64], [2, 8, 32, 64]]
    assert sdpa(ok) is not None
    assert sdpa([[8, 16, 64][1:], [32, 64], [32, 64]]) is None  # 2-D: no head dim
    assert sdpa([ok[0], ok[1], [8, 32, 64]]) is None  # ranks differ
    assert sdpa([ok[0], [2, 8, 32, 48], ok[2]]) is None  # key's E is not the query's
    assert sdpa([ok[0], ok[1], [2, 8, 24, 64]]) is None  # value's S is not the key's
    assert sdpa([ok[0], ok[1], [2, 4, 32, 64]]) is None  # value's heads are not the key's
    assert sdpa([[2, 8, 16, 64], [2, 3, 32, 64], [2, 3, 32, 64]]) is None  # 8 query heads over 3 key heads
    assert sdpa([[2, 8, 16, 64], [2, 0, 32, 64], [2, 0, 32, 64]]) is None  # no key head
    assert sdpa([ok[0], ok[1]]) is None  # no value recorded
    # an attention mask tensor [L, S]: the pairs it keeps are not recorded
    assert sdpa([*ok, [16, 32]], mask_type="c10::BFloat16") is None
    # is_causal not recorded (an old trace without Concrete Inputs)
    assert op(SDPA, [*ok, [], [], [], [], []], [BF16] * 3 + SDPA_T, None) is None


def test_sdpa_backward_with_another_value_dim():
    # _scaled_dot_product_flash_attention_backward(grad_out, q, k, v, out, logsumexp, ...): q, k [2, 8, L, 64] with
    # L = 16 queries, S = 32 keys, v [2, 8, 32, 32]: grad_out and out are [2, 8, 16, 32]; pairs 2 x 8 x 16 x 32
    q, k, v, o = [2, 8, 16, 64], [2, 8, 32, 64], [2, 8, 32, 32], [2, 8, 16, 32]
    shapes = [o, q, k, v, o, [2, 8, 16], [], [], [], [], [], [], [], [], []]
    types = [FP16] * 5 + [FP32, "", "", "Int", "Int", "Double", "Bool", "", "", ""]
    concrete = [""] * 8 + ["16", "32", "0.", "False", "", "", ""]
    w = op("aten::_scaled_dot_product_flash_attention_backward", shapes, types, concrete)
    pairs = 2 * 8 * 16 * 32
    assert w.flops == 2 * pairs * (3 * 64 + 2 * 32)
    n_q, n_k, n_v, n_o = 2 * 8 * 16 * 64, 2 * 8 * 32 * 64, 2 * 8 * 32 * 32, 2 * 8 * 16 * 32
    # read q, k, v, grad_out, out (fp16) and the fp32 log-sum-exp; write dq, dk, dv
    assert w.bytes == (n_q + n_k + n_v) * 2 + 2 * n_o * 2 + 2 * 8 * 16 * 4 + (n_q + n_k + n_v) * 2


def test_addmm_reads_its_bias_too():
    # addmm(self[256], A[32, 64], B[64, 256]) (a linear's bias, input and weight^T): 2 x 32 x 256 x 64 FLOPs
    # (the add not counted); reads self, A, B, writes [32, 256]
    w = op("aten::addmm", [[256], [32, 64], [64, 256], [], []], [BF16] * 3 + ["Scalar", "Scalar"])
    assert (w.flops, w.bytes, w.dtype, w.model) == (2 * 32 * 256 * 64, (256 + 32 * 64 + 64 * 256 + 32 * 256) * 2,
                                                     "bf16", "matmul")
    assert op("aten::addmm", [[256], [32, 64], [48, 256], [], []], [BF16] * 3 + ["Scalar", "Scalar"]) is None


def test_missing_pieces_are_refused_not_crashed_on():
    # FlashAttentionScore without its outputs listed, SDPA without a value, a MatMul with no rows (an empty batch)
    q, k = LAYOUTS["BSND"]
    assert npu("FlashAttentionScore", [q, k, k], ["BF16"] * 3, [""] * 3, [], []) is None
    assert op(SDPA, [[2, 8, 16, 64], [2, 8, 32, 64]], [BF16] * 2, None) is None
    w = npu_mm("MatMulV2", [[0, 4096], [4096, 256]], ["FLOAT16"] * 2, [[0, 256]], ["FLOAT16"])
    assert (w.flops, w.model) == (None, "tensors")
    # the backward of an attention in a dtype without a size: FLOPs known, bytes unknown
    q = [2, 8, 16, 64]
    shapes = [q, q, q, q, q, [2, 8, 16], [], [], [], [], [], [], [], [], []]
    types = ["c10::qint8"] * 5 + [FP32, "", "", "Int", "Int", "Double", "Bool", "", "", ""]
    concrete = [""] * 8 + ["16", "16", "0.", "False", "", "", ""]
    w = op("aten::_scaled_dot_product_flash_attention_backward", shapes, types, concrete)
    assert (w.flops, w.bytes) == (2 * (2 * 8 * 16 * 16) * 5 * 64, None)


# -- convolution forward: transposed, string padding, 1-D / 3-D, per-dim lists, refusals ---------------
def conv(name, shapes, concrete, dtype=FP32, n_scalars=None):
    types = [dtype, dtype, dtype if shapes[2] else ""] + ["ScalarList"] * (len(shapes) - 3)
    return op(name, shapes, types, concrete)


def test_conv_transpose_forward_per_dim():
    # conv_transpose2d(x[4, 64, 14, 10], W[64, 16, 4, 3], b[32], stride [2, 1], padding [1, 0], output_padding
    # [1, 0], groups 2, dilation [1, 2]): out = (i - 1) s - 2 p + d (k - 1) + op + 1:
    # H (14 - 1) 2 - 2 + 1 x 3 + 1 + 1 = 29, W (10 - 1) 1 - 0 + 2 x 2 + 0 + 1 = 14; C_out = 16 x 2 = 32;
    # each input element meets C_out / groups x kh x kw = 16 x 12 weights
    shapes = [[4, 64, 14, 10], [64, 16, 4, 3], [32], [], [], [], [], []]
    w = conv("aten::conv_transpose2d", shapes, ["", "", "", "[2, 1]", "[1, 0]", "[1, 0]", "2", "[1, 2]"])
    assert w.flops == 2 * 4 * 64 * 14 * 10 * 16 * 12
    assert w.bytes == (4 * 64 * 14 * 10 + 64 * 16 * 12 + 32 + 4 * 32 * 29 * 14) * 4
    assert (w.model, w.matrix, w.dtype) == ("conv", True, "fp32")
    # the same through aten::convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
    # groups), the flag recorded
    w2 = conv("aten::convolution", shapes + [[]],
              ["", "", "", "[2, 1]", "[1, 0]", "[1, 2]", "True", "[1, 0]", "2"])
    assert (w2.flops, w2.bytes) == (w.flops, w.bytes)
    # the flag not recorded: not modelled; C_in not the weight's dim 0: not modelled
    assert conv("aten::convolution", shapes + [[]], ["", "", "", "[2, 1]", "[1, 0]", "[1, 2]", "", "[1, 0]", "2"]) is None
    assert conv("aten::conv_transpose2d", [[4, 32, 14, 10], *shapes[1:]],
                ["", "", "", "[2, 1]", "[1, 0]", "[1, 0]", "2", "[1, 2]"]) is None


def test_conv_padding_words_dims_and_single_values():
    shapes = [[2, 8, 15, 15], [16, 8, 3, 3], [16], [], [], [], []]
    # padding 'same': the output keeps 15 x 15; 'valid': no padding, 13 x 13
    same = conv("aten::conv2d", shapes, ["", "", "", "[1, 1]", "'same'", "[1, 1]", "1"])
    assert same.flops == 2 * 2 * 16 * 15 * 15 * 8 * 9
    assert same.bytes == (2 * 8 * 225 + 16 * 8 * 9 + 16 + 2 * 16 * 225) * 4
    valid = conv("aten::conv2d", shapes, ["", "", "", "[1, 1]", "valid", "[1, 1]", "1"])
    assert valid.flops == 2 * 2 * 16 * 13 * 13 * 8 * 9
    assert conv("aten::conv2d", shapes, ["", "", "", "[1, 1]", "'full'", "[1, 1]", "1"]) is None
    # one value for every dim: stride [2], padding [1], dilation [2]: (15 + 2 - 2 x 2 - 1) // 2 + 1 = 7
    w = conv("aten::conv2d", shapes, ["", "", "", "[2]", "[1]", "[2]", "1"])
    assert w.flops == 2 * 2 * 16 * 7 * 7 * 8 * 9
    # conv1d x[4, 16, 100], W[32, 16, 5], stride 2, padding 2: (100 + 4 - 4 - 1) // 2 + 1 = 50
    w = conv("aten::conv1d", [[4, 16, 100], [32, 16, 5], [], [], [], [], []], ["", "", "", "[2]", "[2]", "[1]", "1"])
    assert (w.flops, w.bytes) == (2 * 4 * 32 * 50 * 16 * 5, (4 * 16 * 100 + 32 * 16 * 5 + 4 * 32 * 50) * 4)
    # conv3d x[2, 4, 8, 16, 16], W[8, 4, 3, 3, 3], stride [1, 2, 2], padding 1: out 8 x 8 x 8
    w = conv("aten::conv3d", [[2, 4, 8, 16, 16], [8, 4, 3, 3, 3], [], [], [], [], []],
             ["", "", "", "[1, 2, 2]", "[1, 1, 1]", "[1, 1, 1]", "1"], dtype=BF16)
    assert (w.flops, w.dtype) == (2 * 2 * 8 * 512 * 4 * 27, "bf16")
    # a 3 x 3 input under a 3 x 3 kernel: one output element, modelled
    w = conv("aten::conv2d", [[1, 8, 3, 3], [16, 8, 3, 3], [], [], [], [], []], ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "1"])
    assert w.flops == 2 * 16 * 8 * 9


def test_conv_forward_refusals():
    shapes = [[2, 8, 15, 15], [16, 8, 3, 3], [16], [], [], [], []]
    ok = ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"]
    assert conv("aten::conv2d", shapes, ok) is not None

    def with_(i, value):
        return ok[:i] + [value] + ok[i + 1:]

    assert conv("aten::conv2d", shapes, with_(3, "[1, 1, 1]")) is None  # a stride of 3 values for 2 dims
    assert conv("aten::conv2d", shapes, with_(5, "[1, 1, 1]")) is None  # dilation
    assert conv("aten::conv2d", shapes, with_(4, "[1, 1, 1]")) is None  # padding
    assert conv("aten::conv2d", shapes, with_(6, "")) is None  # groups not recorded
    assert conv("aten::conv2d", shapes, with_(3, "")) is None  # stride not recorded
    assert conv("aten::conv2d", shapes, with_(6, "2")) is None  # 8 channels are not 8 x 2
    # a kernel larger than the padded input: no output
    assert conv("aten::conv2d", [[2, 8, 2, 2], [16, 8, 5, 5], [16], [], [], [], []], with_(4, "[0, 0]")) is None
    assert conv("aten::conv2d", [[8, 15, 15], [16, 8, 3], [16], [], [], [], []], ok) is None  # 1 spatial dim, 2-D stride
    assert conv("aten::conv2d", [[2, 8, 15], [16, 8, 3, 3], [16], [], [], [], []], ok) is None  # ranks differ
    assert conv("aten::conv2d", [[2, 8, 15, 15], [], [16], [], [], [], []], ok) is None  # no weight


def test_conv_last_edges():
    # conv1d's backward (3-D tensors): grad_out [4, 32, 50], x [4, 16, 100], W [32, 16, 5]: 4 x 32 x 50 x 16 x 5 MACs
    w = op("aten::convolution_backward", [[4, 32, 50], [4, 16, 100], [32, 16, 5], [], [], [], [], [], [], [], []],
           [FP32] * 3 + BW_TYPES[3:], ["", "", "", "[32]", "[2]", "[2]", "[1]", "False", "[0]", "1", "[True, False, False]"])
    assert (w.flops, w.model, w.matrix) == (2 * 4 * 32 * 50 * 16 * 5, "conv", True)
    # an output of exactly 0: a 3 x 3 kernel over a 2 x 2 input without padding
    assert conv("aten::conv2d", [[2, 8, 2, 2], [16, 8, 3, 3], [16], [], [], [], []],
                ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "1"]) is None
    # only the input recorded (a trace cut short): not modelled
    assert op("aten::conv2d", [[2, 8, 15, 15]], [FP32], ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "1"]) is None
    assert op("aten::cudnn_convolution_backward_input", [[], [4, 64, 28, 28]], ["", FP16]) is None
    # int8 on the NPU: C0 = 32 in the activations and FRACTAL_Z [C1 x kh x kw, N1, N0 = 16, C0 = 32]; C_out 128 =
    # N1 x N0 = 8 x 16, C_in x kh x kw = 2 x 9 x 32 = 576
    fz = [2 * 9, 8, 16, 32]
    w = npu("Conv2D", [[2, 2, 16, 16, 32], fz], ["INT8", "INT8"], ["NC1HWC0", "FRACTAL_Z"], [[2, 8, 16, 16, 16]],
            ["INT32"])
    assert (w.flops, w.model, w.matrix, w.dtype) == (2 * 2 * 16 * 16 * 128 * 576, "conv", True, "int8")
    # the NPU's gradients are matrix work of the activations' dtype (not filter_size's int32)
    dw = npu("Conv2DBackpropFilter", [X5, [4], Y5], ["FLOAT16", "INT32", "FLOAT16"], ["NC1HWC0", "ND", "NC1HWC0"],
             [FZ], ["FLOAT"])
    assert (dw.model, dw.matrix, dw.dtype) == ("conv", True, "fp16")


def test_cudnn_convolution_of_old_traces_has_no_bias_input():
    # cudnn_convolution(input, weight, padding, stride, dilation, groups, benchmark, deterministic, allow_tf32)
    # (torch <= 1.10): x[2, 8, 15, 15], W[16, 8, 3, 3], padding 1, stride 1: 15 x 15 out; reads x, W, writes y
    shapes = [[2, 8, 15, 15], [16, 8, 3, 3], [], [], [], [], [], [], []]
    types = [FP16, FP16, "ScalarList", "ScalarList", "ScalarList", "Scalar", "Scalar", "Scalar", "Scalar"]
    w = op("aten::cudnn_convolution", shapes, types, ["", "", "[1, 1]", "[1, 1]", "[1, 1]", "1", "False", "False", "True"])
    assert w.flops == 2 * 2 * 16 * 225 * 8 * 9
    assert w.bytes == (2 * 8 * 225 + 16 * 8 * 9 + 2 * 16 * 225) * 2
