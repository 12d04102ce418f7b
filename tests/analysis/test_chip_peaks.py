"""The chip a user names (analysis/efficiency/peaks.py): the Ascend rows are the cube formula on CANN's
platform config, worked out here by hand (AI Cores x MHz x 16 x 16 x 16 MACs x 2 FLOPs); a chip name is
found however it is spelled, an unknown one is refused with the known names; the precedence is the
chosen chip, then the manifest's, then CANNING_DEVICE_PEAKS, then the files (docs/efficiency.md#peaks)."""
import pytest

from canning_tb.analysis.efficiency.peaks import SETTING, UnknownChip, chip_names, chip_row, window_peaks

# (chip, ai_core_cnt, cube_freq MHz) as CANN 8.1.RC1's platform_config/<SoC>.ini list them
ASCEND = [("910B1", 24, 1850), ("910B3", 20, 1800), ("910_9391", 24, 1850), ("310P3", 8, 1060),
          ("910B2", 24, 1800), ("910B4", 20, 1500)]


@pytest.mark.parametrize("chip, cores, mhz", ASCEND)
def test_ascend_rows_are_the_cube_formula(chip, cores, mhz):
    row = chip_row(chip)
    fp16 = cores * mhz * 1e6 * 4096 * 2 / 1e12  # 16 x 16 x 16 MACs a cycle, 2 FLOPs each
    int8 = cores * mhz * 1e6 * 16 * 32 * 16 * 2 / 1e12  # the int8 fractal is 16 x 32 x 16
    assert row.matrix["fp16"] == pytest.approx(fp16, abs=0.05)
    assert row.matrix["int8"] == pytest.approx(int8, abs=0.05)
    assert f"{cores} " in row.source and f"{mhz:,} MHz" in row.source  # the source names what it is derived from


def test_910b3_by_hand():
    # 20 AI Cores x 1,800 MHz x 8,192 FLOPs a cycle = 294.912 TFLOP/s
    assert chip_row("910B3").matrix == {"fp16": 294.91, "bf16": 294.91, "int8": 589.82}
    assert "derived" in chip_row("910B3").source and "Ascend910B3.ini" in chip_row("910B3").source
    assert "bf16" not in chip_row("310P3").matrix  # its cube has no bf16 (Intrinsic_mmad lists none)


@pytest.mark.parametrize("spelt", ["910B3", "910b3", "Ascend910B3", "Huawei Ascend 910B3", " ascend 910B3 "])
def test_a_chip_however_spelt(spelt):
    assert chip_row(spelt).key == "Huawei Ascend 910B3"


def test_gpu_chips_by_their_short_names():
    assert chip_row("H100 SXM5").key == "NVIDIA H100 SXM5"
    assert chip_row("nvidia a100 40gb").key == "NVIDIA A100 40GB"
    assert "910B3" in chip_names("npu") and "H100 SXM5" not in chip_names("npu")
    assert "H100 SXM5" in chip_names("cuda") and "910B3" not in chip_names("cuda")


def test_an_unknown_chip_is_refused_with_the_known_names():
    with pytest.raises(UnknownChip) as e:
        chip_row("910Z9")
    assert "910Z9" in str(e.value) and "910B3" in str(e.value) and "H100 SXM5" in str(e.value)
    with pytest.raises(UnknownChip):
        chip_row("")


NPU = [{"kind": "npu", "index": 0, "name": "Ascend910B2"}]  # the files name the SoC: the 910B2 row


def _one(devices=NPU, chosen=None, manifest=None):
    (peak,) = window_peaks(devices, chosen, manifest)
    return peak


def test_precedence(monkeypatch):
    monkeypatch.delenv(SETTING, raising=False)
    files = _one()
    assert (files.matched, files.origin, files.matrix["fp16"]) == ("Huawei Ascend 910B2", "files", 353.9)
    monkeypatch.setenv(SETTING, '{"Ascend": {"fp16": 100, "hbm": 1600}}')
    setting = _one()
    assert (setting.origin, setting.matrix["fp16"], setting.hbm) == ("setting", 100.0, 1600.0)
    manifest = _one(manifest="910B1")  # the manifest's chip over the setting and the files
    assert (manifest.matched, manifest.origin, manifest.matrix["fp16"], manifest.hbm) == \
        ("Huawei Ascend 910B1", "manifest", 363.72, None)
    chosen = _one(chosen="910B3", manifest="910B1")  # the view's choice over all
    assert (chosen.matched, chosen.origin, chosen.matrix["fp16"]) == ("Huawei Ascend 910B3", "chosen", 294.91)
    assert chosen.source.startswith("910B3, chosen for this view")


def test_a_family_name_alone_gets_no_peak_until_a_chip_is_named(monkeypatch):
    monkeypatch.delenv(SETTING, raising=False)
    family = [{"kind": "npu", "index": 0, "name": "Ascend910B"}]
    assert not _one(family).matrix and _one(family).origin == ""
    assert _one(family, chosen="910B4").matrix["bf16"] == 245.8


def test_a_chip_of_another_kind_is_not_used(monkeypatch):
    monkeypatch.delenv(SETTING, raising=False)
    gpu = [{"kind": "cuda", "index": 0, "name": "Tesla V100-SXM2-32GB", "sm_count": 80}]
    peak = _one(gpu, chosen="910B3")
    assert peak.matched == "NVIDIA V100 SXM2" and peak.origin == "files" and "not for cuda devices" in peak.note


def test_a_manifest_chip_of_a_newer_table_is_a_note_not_a_failure(monkeypatch):
    monkeypatch.delenv(SETTING, raising=False)
    peak = _one(manifest="910Z9")
    assert peak.matched == "Huawei Ascend 910B2" and "910Z9" in peak.note and "not used" in peak.note


def test_a_chosen_chip_of_another_kind_leaves_the_manifests(monkeypatch):
    monkeypatch.delenv(SETTING, raising=False)
    peak = _one(chosen="H100 SXM5", manifest="910B1")  # a GPU chosen on an NPU window: the manifest's chip
    assert (peak.matched, peak.origin) == ("Huawei Ascend 910B1", "manifest") and "not for npu devices" in peak.note
