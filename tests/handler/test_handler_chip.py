"""ps.Profile(chip=...) on a CPU run: the handler writes the chip (its table name) into each window's
manifest settings; a CPU window has no accelerator, so its digest has no peak whatever the chip
(the reading side on an NPU window: tests/store/test_chip_digest.py); a chip the table does not have
fails at once, in the training job, with the known names."""
import json

import pytest

torch = pytest.importorskip("torch")
from canning import profiling_suite as ps  # noqa: E402
from canning_tb.analysis.efficiency.peaks import UnknownChip  # noqa: E402
from canning_tb.store import Store  # noqa: E402

NET = torch.nn.Linear(8, 4)


@pytest.fixture(autouse=True)
def single_process_env(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)


def test_profile_chip_goes_into_the_manifest(tmp_path):
    run = tmp_path / "run"
    sched = ps.schedule(wait=0, warmup=1, active=1, repeat=1)
    with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=sched, chip="ascend910b3",
                    on_trace_ready=ps.tensorboard_trace_handler(str(run))) as prof:
        for _ in range(3):
            NET(torch.randn(2, 8)).sum().backward()
            prof.step()
    (manifest,) = run.glob("*.canning.json")
    assert json.loads(manifest.read_text())["settings"]["chip"] == "910B3"
    store = Store(str(run), cache_dir=str(tmp_path / "cache"))
    (name,) = store.runs()
    (worker,) = store.workers(name)
    (window,) = store.windows(name, worker.name)
    digest = store.digest(name, worker.name, window.id)
    assert digest.window.environment["settings.chip"] == "910B3" and not digest.roofline.peaks


def test_an_unknown_chip_fails_in_the_job():
    with pytest.raises(UnknownChip, match="910B3"):
        ps.Profile(activities=[ps.ProfilerActivity.CPU], chip="910Z9")
