"""Capture through object storage: a job watches s3://... (a real S3 API server, moto, with authentication
on) for its request, `canning-prof capture --logdir s3://...` writes it there, and the job records the named
steps. Its statuses travel through the bucket too. Read back with s3fs and json. (The windows are written to
a local folder here: uploading them is the handler's, tested in test_remote_upload.py.)"""
import json

import pytest

from _capture import wait_for
from _s3 import s3  # noqa: F401  (the fixture)

torch = pytest.importorskip("torch")
from canning import profiling_suite as ps  # noqa: E402
from canning_tb.cli.main import main  # noqa: E402

# a live job planning its start step from its step rate: run alone (make test)
pytestmark = [pytest.mark.slow, pytest.mark.timed]


def test_a_capture_travels_through_the_bucket(s3, capsys, tmp_path):  # noqa: F811
    fs = s3.fs()
    fs.mkdir("logs")
    status = "logs/run/.canning-capture/rank0.status.json"
    prof = ps.Profile(activities=[ps.ProfilerActivity.CPU],
                      schedule=ps.on_demand("s3://logs/run", poll_s=0.05, heartbeat_s=0.5),
                      on_trace_ready=ps.tensorboard_trace_handler(tmp_path / "run", digest=False))
    x = torch.randn(32, 32)

    def read_status():
        try:
            return json.loads(fs.cat_file(status))
        except FileNotFoundError:
            return None
    with prof:
        def stepped(cond):
            for _ in range(50):  # the bucket is read every 50 steps, not at each
                (x @ x).sum()
                prof.step()
            return cond()
        wait_for(lambda: stepped(lambda: (s := read_status()) and s["steps_per_s"]), "a heartbeat in the bucket")
        assert main(["capture", "--logdir", "s3://logs", "--steps", "2"]) == 0
        asked = json.loads(fs.cat_file("logs/run/.canning-capture/request.json"))
        assert not [k for k in fs.ls("logs/run/.canning-capture") if k.rsplit("/", 1)[1].startswith(".request")]
        done = wait_for(lambda: stepped(lambda: (s := read_status()) and s["request"] == asked["id"]
                                        and s["state"] not in ("scheduled", "recording") and s),
                        "the capture done", timeout=60)
    assert (done["state"], done["request"], done["start_step"]) == ("written", asked["id"], asked["start_step"]), done
    (name,) = done["windows"]
    manifest = json.loads((tmp_path / "run" / name).read_text())
    assert manifest["steps"] == [asked["start_step"], asked["start_step"] + 1]
    assert f"capture {asked['id']} of run run" in capsys.readouterr().out
