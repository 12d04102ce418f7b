"""The chip selector in a real TensorBoard driven by real Chromium. On the DLRM V100 trace with its GPU
renamed to one the table does not know, the MFU card shows "–"; picking "V100 SXM2" shows the
hand-computed MFU (test_roofline_route.hand_mfu), the card says where the peak came from, and a
reload keeps the choice (it is in the URL). On the Ascend fixture (family name only) the selector
offers the Ascend chips; picking 910B3 judges the window against it (its FP32 matrix work has no
sourced Ascend peak, so MFU stays "–", as the card's note says). Without the feature there is no
#ov-chip and the card keeps "–": the test fails."""
import shutil

import pytest
from playwright.sync_api import expect

from _tb import FRAME, T, open_plugin, serve, shot
from conftest import fixture_path
from test_cli_chip import _renamed_dlrm
from test_roofline_route import TRACE, hand_mfu
from test_views_browser import loaded

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    root = tmp_path_factory.mktemp("chip_view")
    _renamed_dlrm(root / "dlrm")
    shutil.copytree(fixture_path("ascend", "level1", "rank0_ascend_pt"), root / "npu" / "rank0_ascend_pt")
    yield from serve(root, tmp_path_factory)


def _mfu(frame):
    return frame.locator("#ov-mfu-table tr", has_text="MFU (%)").locator("td")


def _pick_run(frame, run):
    expect(frame.locator("#run-select option")).to_have_count(2, timeout=T)
    frame.locator("#run-select").select_option(run)
    loaded(frame)


def test_pick_a_chip_reload_keeps_it(page, url, errors):
    _, mfu = hand_mfu(fixture_path("param", "dlrm_8ranks", TRACE))
    frame = open_plugin(page, url)
    _pick_run(frame, "dlrm")
    expect(_mfu(frame)).to_have_text("–", timeout=T)
    expect(frame.locator("#ov-chip")).to_have_value("")
    frame.locator("#ov-chip").select_option("V100 SXM2")
    loaded(frame)
    expect(_mfu(frame)).to_have_text(f"{100 * mfu:.1f}", timeout=T)
    expect(frame.locator("#ov-mfu-table")).to_contain_text("NVIDIA V100 SXM2, chosen in the UI")
    assert "p.canning.o.chip=V100" in page.evaluate("location.hash")
    shot(page, "chip_selector")
    page.reload()
    frame = page.frame_locator(FRAME)
    loaded(frame)
    expect(frame.locator("#ov-chip")).to_have_value("V100 SXM2", timeout=T)
    expect(_mfu(frame)).to_have_text(f"{100 * mfu:.1f}", timeout=T)
    frame.locator("#ov-chip").select_option("")  # back to what the files say
    loaded(frame)
    expect(_mfu(frame)).to_have_text("–", timeout=T)
    assert errors == []


def test_ascend_chips(page, url, errors):
    frame = open_plugin(page, url)
    _pick_run(frame, "npu")
    chip = frame.locator("#ov-chip")
    expect(chip.locator("option", has_text="910B3")).to_have_count(1, timeout=T)
    expect(chip.locator("option", has_text="H100 SXM5")).to_have_count(0)
    expect(frame.locator("#ov-mfu-table")).to_contain_text("no peak known")
    chip.select_option("910B3")
    loaded(frame)
    expect(frame.locator("#ov-mfu-table")).to_contain_text("Huawei Ascend 910B3, chosen in the UI", timeout=T)
    expect(frame.locator("#ov-mfu-body")).to_contain_text("fp32 has no peak on Huawei Ascend 910B3")
    frame.locator("#ov-open-roofline").click()
    loaded(frame)
    expect(frame.locator("#roofline-chip")).to_have_value("910B3", timeout=T)
    expect(frame.locator("#roofline-judged")).to_have_text("Judged against: Huawei Ascend 910B3, chosen in the UI")
    expect(frame.locator("#roofline-peaks")).to_contain_text(f"{20 * 1800e6 * 4096 * 2 / 1e12:.0f}")  # 294.9: 3 figures
    assert errors == []
