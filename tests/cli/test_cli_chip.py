"""canning-prof --chip: the chip whose peaks MFU is judged against. On the DLRM V100 fixture with its
device renamed to one the table does not know, MFU is unknown ("-"), and --chip "V100 SXM2" makes it
the hand-computed figure (test_roofline_route.hand_mfu: the trace's matrix FLOPs over its step's span
at the V100 SXM2's FP32 peak, 15.7 TFLOP/s); --chip "A100 40GB" scales it by 15.7 / 19.5 (the datasheets'
FP32 peaks). On the real Ascend fixture (family name only) --chip 910B3 gives the 910B3's cube peaks,
20 AI Cores x 1,800 MHz x 4096 x 2; its matrix work is FP32, which has no sourced Ascend peak, so MFU
stays unknown and a note says why. An unknown chip: exit 2, the known names on stderr."""
import gzip
import json
import shutil
import time
from pathlib import Path

import pytest

from conftest import fixture_path
from test_roofline_route import TRACE, hand_mfu

from canning_tb.cli.main import main as cli_main
from canning_tb.util.manifest import digest_path


def _renamed_dlrm(folder):
    """The DLRM rank-0 trace with its GPU named as no table row is (the user's data stays as it is)."""
    folder.mkdir()
    with gzip.open(fixture_path("param", "dlrm_8ranks", TRACE), "rt") as f:
        trace = json.load(f)
    for dev in trace["deviceProperties"]:
        dev["name"] = "NVIDIA Quux 9000"
    with gzip.open(folder / TRACE, "wt") as f:
        json.dump(trace, f)
    return folder / TRACE


def _roofline(capsys, *args):
    assert cli_main(["view", *args, "--format=json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["windows"]
    return entry["roofline"]


def test_chip_turns_unknown_mfu_into_the_hand_figure(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CANNING_DEVICE_PEAKS", raising=False)
    trace = _renamed_dlrm(tmp_path / "dlrm")
    _, mfu_v100 = hand_mfu(fixture_path("param", "dlrm_8ranks", TRACE))
    common = [f"--input={trace}", f"--cache-dir={tmp_path / 'cache'}"]
    files = _roofline(capsys, *common)
    assert files["mfu"] is None and files["device"]["matched"] is None
    chosen = _roofline(capsys, *common, "--chip", "V100 SXM2")
    assert chosen["mfu"] == pytest.approx(mfu_v100, rel=1e-12)
    assert (chosen["device"]["matched"], chosen["device"]["origin"]) == ("NVIDIA V100 SXM2", "chosen")
    other = _roofline(capsys, *common, "--chip", "a100 40gb")  # another chip on the same window: its own figures
    assert other["mfu"] == pytest.approx(mfu_v100 * 15.7 / 19.5, rel=1e-12)
    again = _roofline(capsys, *common)  # the window's own digest is untouched by the chips' ones
    assert again["mfu"] is None
    assert cli_main(["view", *common, "--chip", "V100 SXM2"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("MFU "))
    assert line.startswith(f"MFU {100 * mfu_v100:.1f} % of NVIDIA Quux 9000 (NVIDIA V100 SXM2, chosen with --chip)")


def test_chip_on_the_ascend_fixture(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CANNING_DEVICE_PEAKS", raising=False)
    folder = tmp_path / "rank0_ascend_pt"
    shutil.copytree(fixture_path("ascend", "level1", "rank0_ascend_pt"), folder)
    common = [f"--input={folder}", f"--cache-dir={tmp_path / 'cache'}"]
    files = _roofline(capsys, *common)
    assert files["device"]["name"] == "Ascend" and files["device"]["tflops"] == {} and files["mfu"] is None
    chosen = _roofline(capsys, *common, "--chip", "Ascend910B3")
    cube = 20 * 1800e6 * 16 * 16 * 16 * 2 / 1e12  # 294.912 TFLOP/s
    assert chosen["device"]["tflops"]["bf16"] == pytest.approx(cube, abs=0.005)
    assert chosen["device"]["origin"] == "chosen" and chosen["device"]["source"].startswith("910B3, chosen")
    assert chosen["mfu"] is None and any("fp32 has no peak on Huawei Ascend 910B3" in n for n in chosen["notes"])


def test_an_unknown_chip_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli_main(["view", f"--input={tmp_path}", "--chip", "910Z9"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "unknown chip '910Z9'" in err and "910B3" in err and "H100 SXM5" in err


def test_performance_writes_the_chip_into_the_manifests(tmp_path, capsys):
    """`performance --chip`: the chip goes into each window's manifest (ps.Profile(chip=...)), where the
    report and the viewer read it; a CPU run has no accelerator to judge, so no peak either way."""
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text("import torch\nm = torch.nn.Linear(8, 2)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\n"
                      "for _ in range(4):\n    m(torch.randn(4, 8)).sum().backward(); opt.step(); opt.zero_grad()\n")
    out = tmp_path / "prof"
    assert cli_main(["performance", f"--output={out}", f"--cache-dir={tmp_path / 'cache'}", "--chip", "910b3",
                     "--activities=cpu", "python", str(script)]) == 0
    (manifest,) = out.glob("*.canning.json")
    assert json.loads(manifest.read_text())["settings"]["chip"] == "910B3"
    # the handler's digest at the source runs in a process of its own: let it finish with its folder here
    digest = Path(digest_path(str(manifest)))
    for _ in range(600):
        if digest.exists():
            break
        time.sleep(0.2)
