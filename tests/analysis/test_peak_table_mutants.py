"""analysis/efficiency/peak_table.py (issue 46: fast tests for a mutation run): the Ascend rows' sources as the cube
formula's derivation says them, written out by hand, and their peaks against that formula worked out here."""
from canning_tb.analysis.efficiency.peak_table import CUBE_FLOPS_PER_CYCLE, ROWS, _ascend

INI = ("https://github.com/leideng/CANN-8.1.RC1/tree/4332a0134a96cfea4a4f6673690a81075c1e4dfb/Ascend/"
       "ascend-toolkit/8.1.RC1/aarch64-linux/data/platform_config/")


def test_an_ascend_rows_source_says_its_derivation():
    assert _ascend("Ascend910B3", 20, 1800) == (
        "derived: 20 AI Cores x 1,800 MHz x 16 x 16 x 16 MACs x 2 (int8 16 x 32 x 16), cores and clock quoted from "
        "CANN 8.1.RC1 platform_config/Ascend910B3.ini ([SoCInfo] ai_core_cnt=20, [AICoreSpec] cube_freq=1800), "
        f"{INI}Ascend910B3.ini")
    assert _ascend("Ascend310P3", 8, 1060, "; a note") == (
        "derived: 8 AI Cores x 1,060 MHz x 16 x 16 x 16 MACs x 2 (int8 16 x 32 x 16), cores and clock quoted from "
        "CANN 8.1.RC1 platform_config/Ascend310P3.ini ([SoCInfo] ai_core_cnt=8, [AICoreSpec] cube_freq=1060; a note), "
        f"{INI}Ascend310P3.ini")


def test_the_derived_ascend_peaks_follow_the_cube_formula():
    # cores x MHz x 16 x 16 x 16 MACs x 2 FLOPs: 910B3 20 x 1,800e6 x 8,192 = 294.912e12; int8 twice that
    derived = {"Huawei Ascend 910B1": (24, 1850), "Huawei Ascend 910B3": (20, 1800),
               "Huawei Ascend 910_9391 (Atlas A3)": (24, 1850), "Huawei Ascend 310P3": (8, 1060)}
    assert CUBE_FLOPS_PER_CYCLE == {"fp16": 8192, "bf16": 8192, "int8": 16384}
    rows = {r.key: r for r in ROWS}
    for key, (cores, mhz) in derived.items():
        row = rows[key]
        assert f"ai_core_cnt={cores}, [AICoreSpec] cube_freq={mhz}" in row.source
        for dtype, tflops in row.matrix.items():
            assert abs(tflops - cores * mhz * 1e6 * CUBE_FLOPS_PER_CYCLE[dtype] / 1e12) < 0.01, (key, dtype)
