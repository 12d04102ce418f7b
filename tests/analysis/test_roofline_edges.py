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
