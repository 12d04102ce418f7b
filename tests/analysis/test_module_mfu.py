"""A module's MFU is its matrix units' time at peak over the module's own device time (its kernels and its
children's), not over its host time, the step's or the window's. A hand-made window: Model_0 holds Block_0
(an aten::linear whose kernel runs 2000 ns) and an aten::add (a 3000 ns kernel); the peak is given
(CANNING_DEVICE_PEAKS, 100 TFLOP/s for bf16) so every figure can be worked out here."""
import pytest

from _synthetic import ev, table

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.op_args import encode
from canning_tb.ingest.table import Kind as K

# linear(x[2, 64, 128], W[256, 128]): M = 2 x 64 = 128, N = 256, K = 128
FLOPS = 2 * 128 * 256 * 128  # 8_388_608
PEAK_NS = FLOPS / 100e12 * 1e9  # at 100 TFLOP/s: 83.886 ns


def launch(ts, corr):
    return ev("cudaLaunchKernel", K.RUNTIME, ts, 5, correlation=corr)


@pytest.fixture
def digest(monkeypatch):
    monkeypatch.setenv("CANNING_DEVICE_PEAKS", '{"Test GPU": {"bf16": 100}}')
    bf16 = encode(types=["c10::BFloat16"] * 3)
    return build_digest(table([
        ev("ProfilerStep#1", K.USER_ANNOTATION, 0, 20_000),
        ev("nn.Module: Model_0", K.PYTHON_FUNCTION, 10, 19_000),  # host time 19000 ns
        ev("nn.Module: Block_0", K.PYTHON_FUNCTION, 100, 9_000),  # host time 9000 ns
        ev("aten::linear", K.CPU_OP, 200, 1_000, shapes="[[2, 64, 128], [256, 128], []]", args=bf16),
        launch(300, 1),
        ev("aten::add", K.CPU_OP, 10_000, 500),
        launch(10_100, 2),
        ev("gemm_bf16", K.KERNEL, 5_000, 2_000, correlation=1),
        ev("add_kernel", K.KERNEL, 12_000, 3_000, correlation=2),
    ], devices=[{"kind": "cuda", "index": 0, "name": "Test GPU"}]))


def test_module_mfu_is_over_the_modules_own_device_time(digest):
    m = {x.path: x for x in digest.modules}
    assert set(m) == {"Model_0", "Model_0/Block_0"}
    block, model = m["Model_0/Block_0"], m["Model_0"]
    assert (block.device_total_ns, model.device_total_ns) == (2_000, 2_000 + 3_000)
    # the linear's FLOPs count in its module and in every module above it
    assert block.roofline.flops == model.roofline.flops == FLOPS
    assert block.roofline.mfu == pytest.approx(PEAK_NS / 2_000)  # 0.0419; over host time 9000 it would be 0.0093
    assert model.roofline.mfu == pytest.approx(PEAK_NS / 5_000)
