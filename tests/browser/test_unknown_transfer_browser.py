"""Issue 45, item 1, in a real TensorBoard driven by real Chromium: a collective that moved data while its
file gives no transfer time shows its transfer as unknown ("–"), never "0.000".

The run: the real Ascend level1 rank 0 alone, its communication.json without CANN's "Transit Time(ms)"
(as a CANN that did not measure it writes the file); every other file unchanged."""
import json
import shutil

import pytest
from playwright.sync_api import expect

from _tb import T, open_plugin, serve
from conftest import fixture_path

pytestmark = pytest.mark.browser

UNKNOWN = "–"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    root = tmp_path_factory.mktemp("unknown_transfer_logdir")
    rank = root / "ascend" / "rank0_ascend_pt"
    shutil.copytree(fixture_path("ascend", "level1") / "rank0_ascend_pt", rank)
    path = rank / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    ops = json.loads(path.read_text())
    for step in ops.values():
        for kind in step.values():
            for op in kind.values():
                op["Communication Time Info"].pop("Transit Time(ms)")
    path.write_text(json.dumps(ops))
    yield from serve(root, tmp_path_factory)


def test_a_collective_without_transfer_time_reads_unknown(page, url, errors):
    frame = open_plugin(page, url)
    expect(frame.locator("#run-select option")).to_have_count(1, timeout=T)
    frame.locator("#tab-communication").click()
    expect(frame.locator("#canning-root")).to_have_attribute("data-state", "loaded", timeout=T)
    row = frame.locator("#comm-table tbody tr", has_text="AllReduce")
    expect(row).to_have_count(1, timeout=T)
    heads = [th.split("\n")[0].strip() for th in frame.locator("#comm-table thead th").all_inner_texts()]
    cells = row.locator("td").all_inner_texts()
    size = cells[heads.index("Size (MB)")]
    assert size != UNKNOWN and float(size.replace(",", "")) > 0  # the collective moved data
    assert cells[heads.index("Transfer (ms)")] == UNKNOWN
    assert cells[heads.index("Wait (ms)")] == UNKNOWN  # the wait is CANN's with its transfer: one split
    summary = frame.locator("#comm-summary tbody tr", has_text="Transfer (ms)")
    expect(summary.locator("td")).to_have_text(UNKNOWN)
    assert "unknown" in summary.locator("th").get_attribute("title").lower()
    assert errors == []
