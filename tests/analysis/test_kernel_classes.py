"""GPU kernels in the right class on every architecture and library: Tensor Core kernels of Volta to
Blackwell (cuBLAS / cuDNN mma codes, xmma, nvjet, CUTLASS sm90 wgmma, DeepGEMM FP8, FlashAttention 2 / 3,
Triton mm templates), the operators eligible for them (the 2021 backward convolutions included),
expert-parallel token exchange kernels as all-to-all communication, and each kernel's launching operator
by its external id only where the launch's time agrees.

The names are the kernels as those libraries name them (demangled as Kineto writes them); the expected
classes come from the libraries' documentation of what each kernel runs on, not from the code under test.
The V100 ResNet share is the old PyTorch TensorBoard plugin's reading of the same trace (68 %).
"""
import pytest

from _synthetic import ev, table
from conftest import fixture_path

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.common import collective_kind
from canning_tb.analysis.kernels import CORE_ELIGIBLE, CORE_TENSOR
from canning_tb.analysis.tensor_cores import uses_tensor_cores
from canning_tb.ingest.kineto.read import read_kineto
from canning_tb.ingest.table import Kind as K
from canning_tb.ingest.table import is_comm_kernel_name

TENSOR_CORE = [
    "volta_h884gemm_64x64_ldg8_nn", "turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_nn",
    "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", "ampere_tf32_s1688gemm_tf32_128x128_16x3_nt",
    "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
    "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NNT",
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
    "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecializedPingpong<2>>>>",
    "void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u, 128u, 128u, 1u, 8u, 128u, 128u, 1u, 1u, 3u, 8u>(float*, int*)",
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>(Flash_fwd_params)",
    "void flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>>>>>(Params)",
    "fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t>)",
    "triton_tem_fused_mm_0",
]
NOT_TENSOR_CORE = [
    "ampere_sgemm_128x64_nn", "volta_sgemm_128x64_nn", "implicit_convolve_sgemm",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>",
    "triton_poi_fused_add_mul_0", "triton_red_fused_native_layer_norm_1",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>",
]


@pytest.mark.parametrize("name", TENSOR_CORE)
def test_tensor_core_kernels_of_every_architecture(name):
    assert uses_tensor_cores(name)


@pytest.mark.parametrize("name", NOT_TENSOR_CORE)
def test_cuda_core_kernels_are_not_tensor_core(name):
    assert not uses_tensor_cores(name)


def test_v100_resnet_eligible_share_is_the_old_plugins():
    """2021's backward convolutions (aten::cudnn_convolution_backward_input / _weight) are eligible: the
    V100 fp32 ResNet's kernel time under eligible operators is the old plugin's 68 % (before: 21.5 %);
    none ran on Tensor Cores (its 0.0 %)."""
    d = build_digest(read_kineto(str(fixture_path("kineto", "resnet50_v100", "worker0.1623143089861.pt.trace.json.gz"))))
    cores = {c.core: c.total_ns for c in d.cores}
    share = cores[CORE_ELIGIBLE] / sum(cores.values())
    assert cores[CORE_TENSOR] == 0 and share == pytest.approx(0.68, abs=0.005)


EXPERT_PARALLEL = [
    "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*)",
    "void deep_ep::internode_ll::combine<3, 7168, 9>(void*, void*, int*, void const*, void const*)",
    "_ZN7deep_ep10intranode8dispatchILi8ELi768ELi8192EEEvP4int4PfPiPlS3_S4_S4_",
    "void pplx::dispatchKernel<128>(int, int, void const*)", "void pplx::combineKernel<__nv_bfloat16>(int)",
    "void tensorrt_llm::kernels::moeA2ADispatchKernel<64>(...)", "mori::moe::EpDispatchIntraNodeKernel<__hip_bfloat16>",
]


@pytest.mark.parametrize("name", EXPERT_PARALLEL)
def test_expert_parallel_exchange_is_all_to_all_communication(name):
    assert is_comm_kernel_name(name) and collective_kind(name) == "AllToAll"


def test_expert_routing_layout_is_compute():
    """DeepEP's get_dispatch_layout computes the routing on the device; it moves no token."""
    assert not is_comm_kernel_name("void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*)")
    assert not is_comm_kernel_name("_ZN7deep_ep6layout19get_dispatch_layoutILi256ELi32ELi8EEEvPKl")


def test_an_external_id_the_launch_time_contradicts_yields_to_containment():
    """The GEMM's external id names aten::result_type (an id reused in the trace), but its launch runs
    inside aten::mm on the same thread: aten::mm launched it (before: 230 ms of GEMM on aten::result_type)."""
    d = build_digest(table([
        ev("aten::result_type", K.CPU_OP, 0, 5, external_id=7),
        ev("aten::mm", K.CPU_OP, 10, 20, external_id=8),
        ev("cudaLaunchKernel", K.RUNTIME, 12, 3, correlation=1, external_id=8),
        ev("sm80_xmma_gemm_f16f16", K.KERNEL, 40, 100, correlation=1, external_id=7),
        ev("aten::add", K.CPU_OP, 200, 10, external_id=9),
        ev("cudaLaunchKernel", K.RUNTIME, 202, 3, correlation=2, external_id=9),
        ev("elementwise", K.KERNEL, 210, 10, correlation=2, external_id=9),
    ], devices=[{"kind": "cuda", "index": 0, "name": "A100", "compute_capability": "8.0"}]))
    owners = {k.name: k.op_name for k in d.kernels_by_op}
    assert owners == {"sm80_xmma_gemm_f16f16": "aten::mm", "elementwise": "aten::add"}
    ops = {o.name: o.device_self_ns for o in d.ops_by_name}
    assert ops["aten::mm"] == 100 and ops["aten::result_type"] == 0
