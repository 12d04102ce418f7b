"""`chip=` on the peak routes, through TensorBoard's router: /roofline and /overview answer the chosen
chip's peaks (910B3: 20 AI Cores x 1,800 MHz x 4096 x 2, by hand) with `origin` "chosen"; /roofline
lists the chips the selector offers for the window's kind of device; an unknown chip is a 422 that
names the known ones; a route without `chip` answers the files' peaks (the window's own digest)."""
import shutil

import pytest
from werkzeug.test import Client
from tensorboard.backend import application

from conftest import fixture_path
from test_plugin_routes import get, make_plugin


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("chip_logdir")
    shutil.copytree(fixture_path("ascend", "level1", "rank0_ascend_pt"), root / "npu" / "rank0_ascend_pt")
    return Client(application.TensorBoardWSGI([make_plugin(root)]))


def _window(client):
    code, runs = get(client, "runs")
    (run,) = runs["runs"]
    (worker,) = run["workers"]
    (window,) = worker["windows"]
    return {"run": run["name"], "worker": worker["name"], "window": window["id"]}


def test_chip_on_the_peak_routes(client, monkeypatch):
    monkeypatch.delenv("CANNING_DEVICE_PEAKS", raising=False)
    win = _window(client)
    code, files = get(client, "roofline", **win)
    assert code == 200 and not files["roofline"]["peaks"][0]["tflops"]
    assert "910B3" in files["chips"] and "H100 SXM5" not in files["chips"]  # the NPU's chips only
    code, chosen = get(client, "roofline", chip="910b3", **win)
    (peak,) = chosen["roofline"]["peaks"]
    assert code == 200 and peak["origin"] == "chosen" and peak["matched"] == "Huawei Ascend 910B3"
    assert peak["tflops"]["fp16"] == pytest.approx(20 * 1800e6 * 4096 * 2 / 1e12, abs=0.005)
    code, ops = get(client, "operators", chip="910B3", **win)
    assert code == 200
    code, again = get(client, "roofline", **win)
    assert not again["roofline"]["peaks"][0]["tflops"]  # no chip: the files' peaks, never the chip's


def test_an_unknown_chip_is_422_with_the_known_names(client):
    code, body = get(client, "roofline", chip="910Z9", **_window(client))
    assert code == 422 and "910Z9" in body["error"] and "910B3" in body["known"]
