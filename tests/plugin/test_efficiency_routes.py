"""/overview's device efficiency, /kernels' measured columns, /operators' Tensor Core shares and
/modules through the real plugin (werkzeug client), on the V100 and Ascend level2 fixtures: the
routes send the digest's figures as they are, in the shapes api.ts declares."""
import shutil

import pytest
from tensorboard.backend import application
from werkzeug.test import Client

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.ascend.read import read_ascend
from conftest import fixture_path
from test_frontend_types import API_TS, missing_fields, ts_interfaces
from test_plugin_routes import RESNET_WINDOW, get, make_plugin, window_params


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("efficiency_logdir")
    resnet = root / "resnet"
    resnet.mkdir()
    shutil.copy(fixture_path("kineto", "resnet50_v100", f"worker0.{RESNET_WINDOW}.pt.trace.json.gz"), resnet)
    shutil.copytree(fixture_path("ascend", "level2", "rank0_ascend_pt"), root / "ascend" / "rank0_ascend_pt")
    return Client(application.TensorBoardWSGI([make_plugin(root)]))


def ascend_window(client):
    _, runs = get(client, "runs")
    run = next(r for r in runs["runs"] if r["name"] == "ascend")
    worker = run["workers"][0]
    return window_params("ascend", worker["name"], worker["windows"][0]["id"])


def test_overview_gpu_card(client):
    code, ov = get(client, "overview", **window_params("resnet", "worker0", RESNET_WINDOW))
    assert code == 200
    (gpu,) = ov["gpu_efficiency"]
    assert ov["npu_efficiency"] == []
    assert gpu["name"] == "Tesla V100-DGXS-32GB" and gpu["kernels"] == 8772
    assert 0 < gpu["sm_efficiency"] < gpu["utilization"] < 1 and gpu["tensor_core_share"] == 0.0
    # over the steps the average keeps: the same span as the overview's average step
    kept = [s for s in ov["steps"] if not s["distorted"]]
    assert gpu["span_ns"] == sum(s["dur_ns"] for s in kept)
    assert missing_fields(ov, "OverviewResponse", ts_interfaces(API_TS.read_text()), "overview") == []


def test_npu_card_kernels_and_modules(client):
    window = ascend_window(client)
    interfaces = ts_interfaces(API_TS.read_text())
    d = build_digest(read_ascend(str(fixture_path("ascend", "level2", "rank0_ascend_pt"))))
    code, ov = get(client, "overview", **window)
    assert code == 200 and ov["gpu_efficiency"] == []
    (npu,) = ov["npu_efficiency"]
    assert npu["ai_core_utilization"] == pytest.approx(d.npu_efficiency[0].ai_core_utilization)
    assert {m["name"] for m in npu["pmu"]} >= {"aic_mac_ratio", "aiv_vec_ratio"}
    code, kernels = get(client, "kernels", **window)
    assert code == 200
    conv = next(k for k in kernels["kernels_by_name"] if k["core"] == "AI_CORE" and k["pmu"])
    assert conv["mean_blocks_per_sm"] == -1 and "aic_mac_ratio" in conv["pmu"]
    code, modules = get(client, "modules", **window)
    assert code == 200 and len(modules["modules"]) == len(d.modules) > 20
    root = modules["modules"][0]
    assert root["path"] == "DistributedDataParallel_0" and root["parent"] == -1
    assert 0 <= root["first_start_ns"] < modules["info"]["duration_ns"]  # relative to the window start
    for name, body in (("OverviewResponse", ov), ("KernelsResponse", kernels), ("ModulesResponse", modules)):
        assert missing_fields(body, name, interfaces, name) == []


def test_modules_of_a_trace_without_them(client):
    code, body = get(client, "modules", **window_params("resnet", "worker0", RESNET_WINDOW))
    assert code == 200 and body["modules"] == []
    code, body = get(client, "modules", **window_params("resnet", "worker0", "nope"))
    assert code == 404
