"""Device peaks: the devices the fixtures name are matched to the table row their datasheet gives;
a device the table does not know gets "–" and a note naming the setting; the setting gives them;
every row's source is cited in docs/efficiency.md; the NPU's HBM bandwidth used is its counters'
mean (read here from the profiler db with sqlite3)."""
import copy
import re
import sqlite3

import pytest

from conftest import REPO, fixture_path

from canning_tb.analysis.build import build_digest
from canning_tb.analysis.efficiency.peak_table import ROWS
from canning_tb.analysis.efficiency.peaks import SETTING, device_peak
from canning_tb.ingest.ascend import read_ascend
from canning_tb.ingest.kineto import read_kineto


def _devices(*parts):
    return read_kineto(str(fixture_path(*parts))).meta.devices


def test_the_fixtures_devices_match_their_datasheet_rows():
    """(The V100 DGXS of the ResNet fixture: tests/analysis/test_roofline_models.py.)"""
    v100 = device_peak({"kind": "cuda", "name": "Tesla V100-DGXS-32GB", "sm_count": 80}, {})
    assert (v100.matched, v100.matrix["fp32"], v100.matrix["fp16"], v100.hbm) == ("NVIDIA V100 SXM2", 15.7, 125.0, 900.0)
    # A100-PG509-200 is an SXM4 board with 40 GB (108 SMs): the 40 GB row, 1,555 GB/s
    a100 = device_peak(_devices("hta", "nccl_parser_config", "nccl_data.json.gz")[0], {})
    assert (a100.matched, a100.matrix["bf16"], a100.matrix["tf32"], a100.hbm) == ("NVIDIA A100 40GB", 312.0, 156.0, 1555.0)
    # ROCm names the MI250's GCD "AMD Radeon Graphics": gfx90a (9.0), 104 CUs, 64 GiB
    mi = device_peak(_devices("hta", "amd_trace", "mi250_minitoy_train_ROCm6_2_kineto.json.gz")[0], {})
    assert (mi.matched, mi.matrix["fp16"], mi.hbm) == ("AMD Instinct MI210 / MI250 (one GCD)", 181.0, 1638.4)


def test_an_unknown_device_gives_no_peak_a_note_and_no_share(monkeypatch):
    table = read_kineto(str(fixture_path("param", "dlrm_8ranks", "worker0_step_12.1694128201545.pt.trace.json.gz")))
    for dev in table.meta.devices:
        dev["name"] = "NVIDIA Quux 9000"
    monkeypatch.delenv(SETTING, raising=False)
    digest = build_digest(copy.deepcopy(table))
    peak = digest.roofline.peaks[0]
    assert not peak.matched and not dict(peak.tflops) and peak.hbm_gbps == -1 and SETTING in peak.note
    mm = next(o for o in digest.ops_by_shape if o.name == "aten::mm").work
    assert mm.flops > 0 and mm.tflops > 0  # what the files say stays
    assert (mm.roof_share, mm.roof_tflops, mm.bound) == (-1, -1, "")  # what needs the peak is unknown
    assert digest.roofline.mfu == -1 and digest.roofline.hbm_share == -1
    # the setting the note names gives them
    monkeypatch.setenv(SETTING, '{"Quux": {"fp32": 20, "hbm": 1000, "vector": 20}}')
    digest = build_digest(table)
    peak = digest.roofline.peaks[0]
    assert dict(peak.tflops) == {"fp32": 20.0} and peak.hbm_gbps == 1000 and peak.source.startswith(SETTING)
    mm = next(o for o in digest.ops_by_shape if o.name == "aten::mm").work
    assert mm.roof_tflops == pytest.approx(min(20, mm.intensity * 1000 / 1e3)) and mm.roof_share > 0
    assert digest.roofline.mfu > 0


def test_ascend_peak_from_the_cube_formula():
    """A device whose files give its AI Core count and clock: cores x MHz x 16 x 16 x 16 x 2."""
    peak = device_peak({"kind": "npu", "index": 0, "name": "Ascend (Ascend910B)", "ai_core_num": 24,
                        "aic_frequency_mhz": 1800}, {})
    assert peak.matrix["bf16"] == pytest.approx(24 * 1800e6 * 4096 * 2 / 1e12, abs=0.01) and peak.hbm is None
    assert "HBM bandwidth" in peak.note and device_peak({"kind": "npu", "name": "Ascend910B2"}, {}).matched


def test_every_table_row_has_its_source_in_the_docs():
    doc = (REPO / "docs" / "efficiency.md").read_text(encoding="utf-8")
    for row in ROWS:
        assert row.source and row.key in doc, row.key
        for url in re.findall(r"https?://\S+?(?=[ ,)]|$)", row.source):
            assert url in doc, (row.key, url)


def test_npu_hbm_bandwidth_used_is_the_counters_mean():
    folder = fixture_path("ascend", "db_level2", "rank0_ascend_pt")
    digest = build_digest(read_ascend(str(folder)))
    db = folder / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    (step,) = [s for s in digest.steps if s.number in set(digest.average_steps)]
    sums = con.execute("select timestampNs, sum(bandwidth) from HBM where deviceId = 0 and timestampNs >= ? and "
                       "timestampNs < ? group by timestampNs", (step.start_ns, step.start_ns + step.dur_ns)).fetchall()
    assert sums
    assert digest.roofline.hbm_source == "hbm_counters"
    assert digest.roofline.hbm_gbps == pytest.approx(sum(v for _, v in sums) / len(sums) / 1e9, rel=1e-9)


def test_ascend_device_info_gives_the_cube_peak(tmp_path):
    """CANN's device info as msprof writes it beside the export (PROF_*/device_0/info.json.0, the
    fields msprof-analyze's operator MFU reads: DeviceInfo[0].ai_core_num, aic_frequency). The
    fixture folders hold no PROF_ directory (the real file needs CANN): one is written here in that
    format. The fixture's matmuls are fp32, for which no cube peak is sourced: left out of MFU."""
    import json
    import shutil

    folder = tmp_path / "rank0_ascend_pt"
    shutil.copytree(fixture_path("ascend", "level2", "rank0_ascend_pt"), folder)
    device = folder / "PROF_000001_20250109_000000_AAAAAAAAAAAAAAAA" / "device_0"
    device.mkdir(parents=True)
    (device / "info.json.0").write_text(json.dumps({"DeviceInfo": [{"id": 0, "ai_core_num": 20, "aic_frequency": "1800"}]}))
    digest = build_digest(read_ascend(str(folder)))
    (peak,) = digest.roofline.peaks
    assert peak.matched == "Ascend cube formula" and peak.tflops["bf16"] == pytest.approx(20 * 1800e6 * 8192 / 1e12, abs=0.01)
    assert digest.roofline.mfu == -1 and any("fp32 has no peak" in n for n in digest.roofline.notes)
