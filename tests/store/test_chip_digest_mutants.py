"""store/chip_digest.py under mutation (issue 46): the entry names by hand (sha1 of the chip's name, its
first 10 hex digits), the plugin's per-request view of a store with a stand-in store, and the worker
named on a digest built for a chip from a tiny hand-written Kineto trace."""
import hashlib
import json

import pytest

from canning_tb.analysis.efficiency.peaks import UnknownChip
from canning_tb.ingest.chrome_array import read_chrome_trace
from canning_tb.store.chip_digest import ChipView, build_for_chip, canonical, chip_entry


def test_canonical_names_and_an_unknown_chip():
    assert canonical("ascend910b1") == "910B1" and canonical("910B1") == "910B1"
    with pytest.raises(UnknownChip):
        canonical("not a chip")


def test_the_entry_sits_beside_the_windows_digest():
    tag = "chip-" + hashlib.sha1(b"910B1").hexdigest()[:10]
    assert chip_entry("k", "/c/k.digest.pb", "910B1") == (f"k.{tag}", f"/c/k.{tag}.digest.pb")


class Store:
    def __init__(self):
        self.asked, self.path = [], "/logs"

    def digest(self, run, worker, window_id, chip=None):
        self.asked.append((run, worker, window_id, chip))
        return "digest"


def test_the_view_asks_the_store_for_its_chips_digest_and_is_the_store_otherwise():
    store = Store()
    view = ChipView(store, "ascend910b1")
    assert view.chip == "910B1"
    assert view.digest("r", "w", "1") == "digest" and view.digest_part("r", "w", "2", ("steps",)) == "digest"
    assert store.asked == [("r", "w", "1", "910B1"), ("r", "w", "2", "910B1")]
    assert view.path == "/logs"


def test_a_digest_for_a_chip_names_its_worker_unless_the_trace_does(tmp_path):
    trace = tmp_path / "w.pt.trace.json"
    trace.write_text(json.dumps({"deviceProperties": [{"id": 0, "name": "some gpu"}], "traceEvents": [
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "ts": 100, "dur": 5, "pid": 1, "tid": 1},
        {"ph": "X", "name": "ProfilerStep#7", "cat": "user_annotation", "ts": 99, "dur": 10, "pid": 1, "tid": 1}]}))
    table = read_chrome_trace(str(trace))
    digest = build_for_chip(table, "rank3", "A100 40GB")
    assert digest.window.worker == "rank3"
    (peak,) = digest.roofline.peaks  # A100 40GB datasheet: 312 dense fp16 TFLOPS, 1,555 GB/s
    assert (peak.matched, peak.origin, peak.tflops["fp16"], peak.hbm_gbps) == ("NVIDIA A100 40GB", "chosen", 312, 1555)
    assert build_for_chip(table, "", "A100 40GB").window.worker == ""
