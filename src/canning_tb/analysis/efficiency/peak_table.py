"""Dense peaks of the devices canning-tb knows, each row with its source (docs/efficiency.md#peaks).

`matrix`: the matrix units' dense peak per dtype class, TFLOP/s (Tensor Cores, AMD Matrix Cores, the
Ascend cube; an NVIDIA FP32 GEMM without TF32 runs on the CUDA cores, so "fp32" is their peak);
`vector`: the FP32 peak of the vector units (CUDA cores, stream processors), TFLOP/s; `hbm`: GB/s.
Sparse figures of the datasheets are halved to dense. A device matches a row when its name matches
`names` and, where given, its SM / CU count and memory; the first row that matches wins. A row's
`chip` is the short name a user gives to choose it (`--chip 910B3`, peaks.chip_row); "" for rows that
only match the files' names.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PeakRow:
    key: str
    kinds: tuple  # device kinds it applies to: "cuda", "rocm", "npu"
    names: str  # regular expression on the device's name (case-insensitive)
    matrix: dict = field(default_factory=dict)
    vector: float | None = None
    hbm: float | None = None
    source: str = ""
    units: int | None = None  # SMs (CUDA), CUs (ROCm), AI Cores (NPU) the device must report
    memory_gib: tuple | None = None  # (low, high) the device's memory must lie in
    arch: str = ""  # compute capability the device must report ("9.0" for gfx90a)
    chip: str = ""  # the name a user chooses the row by ("910B3"); "" for rows only the files' names match


_V100 = "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
_A100 = ("https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
         "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
_H100 = "https://www.nvidia.com/en-us/data-center/h100/ (specifications; sparse figures halved)"
_A100_MATRIX = {"fp64": 19.5, "fp32": 19.5, "tf32": 156.0, "fp16": 312.0, "bf16": 312.0, "int8": 624.0}
_H100_SXM = {"fp64": 67.0, "fp32": 67.0, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4, "fp8": 1978.9, "int8": 1978.9}
_MI300X = {"fp64": 163.4, "fp32": 163.4, "tf32": 653.7, "fp16": 1307.4, "bf16": 1307.4, "fp8": 2614.9,
           "int8": 2614.9}
_ASCEND_FORMULA = ("AI Cores x cube clock x 16 x 16 x 16 MACs x 2 (int8 16 x 32 x 16); cores and clock from "
                   "CANN's platform_config/{soc}.ini [SoCInfo] ai_core_cnt, [AICoreSpec] cube_freq")

_CANN_INI = ("https://github.com/leideng/CANN-8.1.RC1/tree/4332a0134a96cfea4a4f6673690a81075c1e4dfb/Ascend/"
             "ascend-toolkit/8.1.RC1/aarch64-linux/data/platform_config/")


def _ascend(soc: str, cores: int, mhz: int, note: str = "") -> str:
    """The source of an Ascend row derived by the cube formula from CANN's platform config."""
    return (f"derived: {cores} AI Cores x {mhz:,} MHz x 16 x 16 x 16 MACs x 2 (int8 16 x 32 x 16), cores and clock "
            f"quoted from CANN 8.1.RC1 platform_config/{soc}.ini ([SoCInfo] ai_core_cnt={cores}, [AICoreSpec] "
            f"cube_freq={mhz}{note}), {_CANN_INI}{soc}.ini")


ROWS: tuple[PeakRow, ...] = (
    # NVIDIA (device names as torch / Kineto's deviceProperties give them)
    PeakRow("NVIDIA V100S PCIe", ("cuda",), r"V100S", {"fp64": 8.2, "fp32": 16.4, "fp16": 130.0}, 16.4, 1134.0,
            f"NVIDIA V100 datasheet, {_V100}"),
    PeakRow("NVIDIA V100 PCIe", ("cuda",), r"V100-PCIE", {"fp64": 7.0, "fp32": 14.0, "fp16": 112.0}, 14.0, 900.0,
            f"NVIDIA V100 datasheet, {_V100}"),
    PeakRow("NVIDIA V100 SXM2", ("cuda",), r"V100-SXM2|V100-DGXS", {"fp64": 7.8, "fp32": 15.7, "fp16": 125.0},
            15.7, 900.0, f"NVIDIA V100 datasheet, {_V100} (DGX Station: 4 x V100 SXM2 = 500 TFLOPS, its datasheet)"),
    PeakRow("NVIDIA T4", ("cuda",), r"\bT4\b", {"fp32": 8.1, "fp16": 65.0, "int8": 130.0}, 8.1, 320.0,
            "NVIDIA T4 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/"
            "t4-tensor-core-datasheet-951643.pdf"),
    PeakRow("NVIDIA A100 80GB SXM4", ("cuda",), r"A100.*(SXM|PG509)", _A100_MATRIX, 19.5, 2039.0,
            f"NVIDIA A100 datasheet, {_A100}", memory_gib=(70, 90)),
    PeakRow("NVIDIA A100 80GB PCIe", ("cuda",), r"A100.*PCI", _A100_MATRIX, 19.5, 1935.0,
            f"NVIDIA A100 datasheet, {_A100}", memory_gib=(70, 90)),
    PeakRow("NVIDIA A100 40GB", ("cuda",), r"A100", _A100_MATRIX, 19.5, 1555.0,
            f"NVIDIA A100 datasheet, {_A100} (PCIe and SXM4 40GB: 1,555 GB/s)", memory_gib=(35, 45)),
    PeakRow("NVIDIA A10", ("cuda",), r"\bA10\b", {"fp32": 31.2, "tf32": 62.5, "fp16": 125.0, "bf16": 125.0,
                                                  "int8": 250.0}, 31.2, 600.0,
            "NVIDIA A10 datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a10/pdf/"
            "a10-datasheet.pdf (sparse figures halved)"),
    PeakRow("NVIDIA L4", ("cuda",), r"\bL4\b", {"fp32": 30.3, "tf32": 60.0, "fp16": 121.0, "bf16": 121.0,
                                                "fp8": 242.5, "int8": 242.5}, 30.3, 300.0,
            "NVIDIA L4 datasheet, https://www.nvidia.com/en-us/data-center/l4/ (sparse figures halved)"),
    PeakRow("NVIDIA L40S", ("cuda",), r"L40S", {"fp32": 91.6, "tf32": 183.0, "fp16": 362.05, "bf16": 362.05,
                                               "fp8": 733.0, "int8": 733.0}, 91.6, 864.0,
            "NVIDIA L40S datasheet, https://www.nvidia.com/en-us/data-center/l40s/ (sparse figures halved)"),
    PeakRow("NVIDIA H100 NVL", ("cuda",), r"H100 NVL", {"fp64": 60.0, "fp32": 60.0, "tf32": 417.5, "fp16": 835.5,
                                                       "bf16": 835.5, "fp8": 1670.5, "int8": 1670.5}, 60.0, 3900.0,
            f"NVIDIA H100 datasheet, {_H100}"),
    PeakRow("NVIDIA H100 PCIe", ("cuda",), r"H100.*PCI", {"fp64": 51.0, "fp32": 51.0, "tf32": 378.0, "fp16": 756.0,
                                                         "bf16": 756.0, "fp8": 1513.0, "int8": 1513.0}, 51.0, 2000.0,
            f"NVIDIA H100 datasheet, {_H100}"),
    PeakRow("NVIDIA H100 SXM5", ("cuda",), r"H100", _H100_SXM, 67.0, 3350.0, f"NVIDIA H100 datasheet, {_H100}",
            units=132),
    PeakRow("NVIDIA H200 SXM", ("cuda",), r"H200(?!.*NVL)", _H100_SXM, 67.0, 4800.0,
            "NVIDIA H200 datasheet, https://www.nvidia.com/en-us/data-center/h200/ (sparse figures halved)"),
    PeakRow("NVIDIA B200", ("cuda",), r"B200", {"fp64": 37.0, "tf32": 1125.0, "fp16": 2250.0, "bf16": 2250.0,
                                               "fp8": 4500.0, "int8": 4500.0}, 75.0, 8000.0,
            "NVIDIA HGX B200 specifications, https://www.nvidia.com/en-us/data-center/hgx/ (8 GPUs: per GPU / 8, "
            "sparse figures halved)"),
    # AMD: ROCm names many parts "AMD Radeon Graphics"; the architecture, CU count and memory tell them
    PeakRow("AMD Instinct MI300X", ("rocm",), r"MI300X|AMD", _MI300X, 163.4, 5300.0,
            "AMD Instinct MI300X, https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
            units=304, memory_gib=(180, 200)),
    PeakRow("AMD Instinct MI325X", ("rocm",), r"MI325X|AMD", _MI300X, 163.4, 6000.0,
            "AMD Instinct MI325X, https://www.amd.com/en/products/accelerators/instinct/mi300/mi325x.html",
            units=304, memory_gib=(240, 260)),
    PeakRow("AMD Instinct MI300A", ("rocm",), r"MI300A|AMD", {"fp64": 122.6, "fp32": 122.6, "tf32": 490.3,
                                                             "fp16": 980.6, "bf16": 980.6, "fp8": 1961.2,
                                                             "int8": 1961.2}, 122.6, 5300.0,
            "AMD Instinct MI300A, https://www.amd.com/en/products/accelerators/instinct/mi300/mi300a.html", units=228),
    PeakRow("AMD Instinct MI250X (one GCD)", ("rocm",), r"MI250X|AMD", {"fp64": 47.85, "fp32": 47.85, "fp16": 191.5,
                                                                       "bf16": 191.5, "int8": 191.5}, 23.95, 1638.4,
            "AMD Instinct MI250X, https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html (two "
            "GCDs, each one device: per GCD = / 2)", units=110, arch="9.0"),
    PeakRow("AMD Instinct MI210 / MI250 (one GCD)", ("rocm",), r"MI210|MI250|AMD",
            {"fp64": 45.3, "fp32": 45.3, "fp16": 181.0, "bf16": 181.0, "int8": 181.0}, 22.6, 1638.4,
            "AMD Instinct MI210, https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html (an MI250 "
            "is two such GCDs: https://www.amd.com/en/products/accelerators/instinct/mi200/mi250.html, 362.1 "
            "TFLOPS FP16, 3.2768 TB/s)", units=104, arch="9.0", memory_gib=(60, 66)),
    # Huawei Ascend. The 910B / A3 / 310P rows: the cube formula on CANN 8.1.RC1's platform_config (_CANN_INI);
    # torch_npu names the SoC as CANN does ("Ascend910B3", "Ascend910_9391"), the family alone ("Ascend910B") fits none
    PeakRow("Huawei Ascend 910", ("npu",), r"Ascend ?910(A|$| |\))", {"fp16": 256.0, "int8": 512.0}, None, None,
            "Huawei, Ascend 910 launch (2019): 256 TFLOPS FP16, 512 TOPS INT8, "
            "https://www.huawei.com/en/news/2019/8/huawei-ascend-910-most-powerful-ai-processor", chip="910A"),
    PeakRow("Huawei Ascend 910B1", ("npu",), r"910B1", {"fp16": 363.72, "bf16": 363.72, "int8": 727.45}, None, None,
            _ascend("Ascend910B1", 24, 1850), chip="910B1"),
    PeakRow("Huawei Ascend 910B2", ("npu",), r"910B2", {"fp16": 353.9, "bf16": 353.9, "int8": 707.8}, None, None,
            _ASCEND_FORMULA.format(soc="Ascend910B2") + ": 24 cores, 1,800 MHz", chip="910B2"),
    PeakRow("Huawei Ascend 910B3", ("npu",), r"910B3", {"fp16": 294.91, "bf16": 294.91, "int8": 589.82}, None, None,
            _ascend("Ascend910B3", 20, 1800), chip="910B3"),
    PeakRow("Huawei Ascend 910B4", ("npu",), r"910B4", {"fp16": 245.8, "bf16": 245.8, "int8": 491.5}, None, None,
            _ASCEND_FORMULA.format(soc="Ascend910B4") + ": 20 cores, 1,500 MHz", chip="910B4"),
    PeakRow("Huawei Ascend 910_9391 (Atlas A3)", ("npu",), r"910_9391", {"fp16": 363.72, "bf16": 363.72,
                                                                        "int8": 727.45}, None, None,
            _ascend("Ascend910_9391", 24, 1850), chip="910_9391"),
    PeakRow("Huawei Ascend 310P3", ("npu",), r"310P3", {"fp16": 69.47, "int8": 138.94}, None, None,
            _ascend("Ascend310P3", 8, 1060, "; no bf16: its Intrinsic_mmad lists none"), chip="310P3"),
)

# the Ascend cube's dense work per AI Core per cycle, FLOPs (16 x 16 x 16 MACs, int8 16 x 32 x 16)
CUBE_FLOPS_PER_CYCLE = {"fp16": 16 * 16 * 16 * 2, "bf16": 16 * 16 * 16 * 2, "int8": 16 * 32 * 16 * 2}
