"""A digest computed with chip X is never served for chip Y (store/chip_digest.py): on a copy of the
Ascend fixture, chip X then chip Y on the same window give Y's peaks, a fresh store reads each chip's
own cache entry back, and the window's own digest (the first view's) keeps the files' peaks. The
manifest's chip (ps.Profile(chip=...)) is the default of an NPU window's digest, and a chip chosen for
the view wins over it. Expected peaks: AI Cores x MHz x 4096 x 2, by hand."""
import json
import os
import shutil

import pytest

from conftest import fixture_path

from canning_tb.store import Store
from canning_tb.store.chip_digest import ChipView

B3 = 20 * 1800e6 * 4096 * 2 / 1e12  # 294.912
B1 = 24 * 1850e6 * 4096 * 2 / 1e12  # 363.72


def _one_window(store):
    (run,) = store.runs()
    (worker,) = store.workers(run)
    (window,) = store.windows(run, worker.name)
    return run, worker.name, window.id


def _peak(digest):
    (peak,) = digest.roofline.peaks
    return peak


@pytest.fixture
def ascend(tmp_path, monkeypatch):
    monkeypatch.delenv("CANNING_DEVICE_PEAKS", raising=False)
    run = tmp_path / "logdir" / "run"
    run.mkdir(parents=True)
    shutil.copytree(fixture_path("ascend", "level1", "rank0_ascend_pt"), run / "rank0_ascend_pt")
    return run


def test_chip_x_then_chip_y_gives_y(ascend, tmp_path):
    cache = str(tmp_path / "cache")
    store = Store(str(ascend.parent), cache_dir=cache)
    ident = _one_window(store)
    x = store.digest(*ident, chip="910B3")
    y = store.digest(*ident, chip="910B1")
    assert _peak(x).tflops["fp16"] == pytest.approx(B3, abs=0.005)
    assert _peak(y).tflops["fp16"] == pytest.approx(B1, abs=0.005) and _peak(y).matched == "Huawei Ascend 910B1"
    assert not _peak(store.digest(*ident)).tflops  # the window's own digest: the files name no SoC
    folder = os.path.dirname(store.digest_cache_path(*ident))
    entries = sorted(n for n in os.listdir(folder) if ".chip-" in n)
    assert len(entries) == 2  # one entry per chip, beside the window's own
    fresh = Store(str(ascend.parent), cache_dir=cache)  # no memory: each chip's entry read back from the cache
    assert _peak(fresh.digest(*ident, chip="910B1")).matched == "Huawei Ascend 910B1"
    assert _peak(fresh.digest(*ident, chip="910B3")).matched == "Huawei Ascend 910B3"
    view = ChipView(fresh, "ascend910b1")  # the plugin's per-request view of the store
    assert _peak(view.digest_part(*ident, ("roofline",))).matched == "Huawei Ascend 910B1"


def test_the_manifests_chip_and_a_chosen_one(ascend, tmp_path):
    manifest = {"format_version": 1, "kind": "ascend_pt", "worker": "rank0", "window": 0, "rank": 0,
                "world_size": 1, "files": [{"name": "rank0_ascend_pt", "kind": "ascend_pt"}],
                "analysis": "sync", "settings": {"chip": "910B3"}}
    (ascend / "rank0.0.canning.json").write_text(json.dumps(manifest))
    store = Store(str(ascend.parent), cache_dir=str(tmp_path / "cache"))
    ident = _one_window(store)
    own = _peak(store.digest(*ident))
    assert (own.matched, own.origin) == ("Huawei Ascend 910B3", "manifest")
    assert own.tflops["bf16"] == pytest.approx(B3, abs=0.005)
    chosen = _peak(store.digest(*ident, chip="910B1"))
    assert (chosen.matched, chosen.origin) == ("Huawei Ascend 910B1", "chosen")
