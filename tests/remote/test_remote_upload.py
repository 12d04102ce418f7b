"""Windows of a remote run folder are uploaded in the background, against a real S3 API server (moto,
tests/_s3.py) reached through a gate: a TCP proxy in this process that holds the request of the test's
choosing until the test lets it go. An upload on a slow link, under the test's control: nothing in the
code under test sleeps or is faked.

The step that ends a window returns while that window's upload is held; every window lands, in order,
once stop() returns; a rank killed mid-upload leaves only temporary keys (removed at the next start);
a bucket removed mid-run gives one clear warning and the later windows still upload; async_mode works
with a remote folder (on the fake torch_npu of tests/npu_double: the real one needs Ascend hardware).
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from _procs import communicate_all
from _s3 import s3  # noqa: F401  (the fixture)

torch = pytest.importorskip("torch")
from canning import profiling_suite as ps  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
REQUEST_LINE = re.compile(rb"^(?:GET|PUT|POST|DELETE|HEAD) (\S+) HTTP/1\.1", re.M)
HOLD_TIMEOUT_S = 60
OUT = "ASCEND_PROFILER_OUTPUT"


class Gate:
    """A TCP proxy to the S3 server; hold(pattern) makes the next request whose path contains pattern
    wait until release(), which forwards it (or drops its connection: forward=False)."""

    def __init__(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.paths = []  # request paths seen, in order ("PUT /bucket/key")
        self.held = threading.Event()
        self._pattern = None
        self._caught = None  # (go event, [forward]) of the request waiting at the gate
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def hold(self, pattern: bytes):
        with self._lock:
            self._pattern = pattern
            self.held.clear()

    def wait_held(self):
        assert self.held.wait(HOLD_TIMEOUT_S), f"no request for {self._pattern!r} reached the gate"

    def release(self, forward=True):
        with self._lock:
            caught, self._caught = self._caught, None
        if caught is not None:
            caught[1][0] = forward
            caught[0].set()

    def close(self):
        self.release()
        self.listener.close()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed
                return
            server = socket.create_connection(self.target)
            threading.Thread(target=self._upstream, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()

    def _upstream(self, client, server):
        try:
            while data := client.recv(1 << 16):
                if not self._admit(data):
                    break
                server.sendall(data)
        except OSError:
            pass
        finally:
            client.close()
            server.close()

    def _admit(self, data: bytes) -> bool:
        """Note the requests in this chunk; wait at the gate when one is held; False: drop the connection."""
        for found in REQUEST_LINE.finditer(data):
            line = found.group(0)[: -len(b" HTTP/1.1")].decode()
            self.paths.append(line)
            with self._lock:
                caught = None
                if self._pattern is not None and self._pattern in found.group(1):
                    caught = self._caught = (threading.Event(), [True])
                    self._pattern = None
                    self.held.set()
            if caught is not None:  # held until released; a step that waits for it fails the test, not hangs it
                caught[0].wait(HOLD_TIMEOUT_S)
                return caught[1][0]
        return True

    @staticmethod
    def _pipe(src, dst):
        try:
            while data := src.recv(1 << 16):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            src.close()
            dst.close()


@pytest.fixture
def gate(s3, monkeypatch):  # noqa: F811
    proxy = Gate(s3.port)
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)  # the uploader inherits it; s3.fs() goes direct
    yield proxy
    proxy.close()


def work(prof, steps):
    net = torch.nn.Linear(64, 64)
    for _ in range(steps):
        net(torch.randn(32, 64)).sum().backward()
        prof.step()


def windows_profile(url, windows, **handler_kwargs):
    """ps.Profile writing `windows` windows of two steps each (the second step of each ends it)."""
    handler = ps.tensorboard_trace_handler(url, worker_name="w", **handler_kwargs)
    return handler, ps.Profile(activities=[ps.ProfilerActivity.CPU], on_trace_ready=handler,
                               schedule=ps.schedule(wait=0, warmup=1, active=1, repeat=windows))


def final_manifest_puts(gate, bucket):
    """The moves of manifests to their names (S3 copies are PUTs to the new key), in the order sent."""
    return [p.rsplit("/", 1)[1] for p in gate.paths
            if p.startswith(f"PUT /{bucket}/") and p.endswith(".canning.json") and "/." not in p]


def wait_ended(pid: int):
    """Until the process is gone, or a zombie whose threads have all ended (read from /proc: SIGKILL is
    delivered asynchronously, and a process's files close only when its last thread ends)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z" and tasks == [str(pid)]:
                    return
        except FileNotFoundError:
            return
        time.sleep(0.1)
    raise AssertionError(f"process {pid} still runs")


def fresh_bucket(s3, name):  # noqa: F811
    fs = s3.fs()
    fs.mkdir(name)
    return fs


def test_the_step_returns_while_its_window_uploads_and_every_window_lands_in_order(s3, gate):  # noqa: F811
    fs = fresh_bucket(s3, "order")
    gate.hold(b".pt.trace.json.gz.")  # the first window's trace, under its temporary key
    handler, prof = windows_profile("s3://order/logs/run", 3, digest=False)
    with prof:
        work(prof, 2)  # the second step ended window 0: its handler call has returned
        gate.wait_held()  # ... while its upload waits at the gate
        fs.invalidate_cache()
        assert not fs.glob("order/logs/run/*.canning.json")
        assert [k for k in fs.find("order") if "pt.trace" in k] == []  # not one byte of it landed
        work(prof, 4)  # two more windows, queued behind it
        gate.release()
    # stop() returned: every window is in the bucket, and nothing else
    fs.invalidate_cache()
    keys = [os.path.basename(k) for k in fs.find("order/logs/run")]
    manifests = sorted(k for k in keys if k.endswith(".canning.json"))
    assert len(manifests) == 3 and [m[-len("00000.canning.json"):] for m in manifests] == \
        ["00000.canning.json", "00001.canning.json", "00002.canning.json"]
    assert not [k for k in keys if k.startswith(".") or k.endswith(".tmp")], keys
    for name in manifests:
        man = json.loads(fs.cat(f"order/logs/run/{name}"))
        assert [f["name"] in keys for f in man["files"]] == [True]
    assert final_manifest_puts(gate, "order") == manifests  # published one after the other, in window order
    assert len([k for k in keys if k.startswith("events.out.tfevents.")]) == 1  # the scalars came along
    staged = [n for n in os.listdir(handler.remote.stage) if not n.startswith("events.out.tfevents.")]
    assert staged == []  # nothing left behind on the training machine


def test_where_pipes_take_no_select_a_thread_reads_the_answers(s3, gate, monkeypatch):  # noqa: F811
    """Windows' way (its select() takes sockets only), forced here: the uploader's answers come through the
    reader thread, never select(); with one window allowed to wait, every window lands, in window order."""
    from canning_tb.handler import upload_queue

    class NoSelect:
        @staticmethod
        def select(*_):
            raise AssertionError("select() called on the uploader's pipe")
    monkeypatch.setattr(upload_queue, "SELECT_PIPES", False)
    monkeypatch.setattr(upload_queue, "select", NoSelect)
    fs = fresh_bucket(s3, "bythread")
    handler, prof = windows_profile("s3://bythread/logs/run", 3, digest=False, max_pending_uploads=1)
    with prof:
        work(prof, 6)
    fs.invalidate_cache()
    manifests = sorted(os.path.basename(k) for k in fs.glob("bythread/logs/run/*.canning.json"))
    assert [m[-len("00000.canning.json"):] for m in manifests] == \
        ["00000.canning.json", "00001.canning.json", "00002.canning.json"]
    assert final_manifest_puts(gate, "bythread") == manifests
    assert [n for n in os.listdir(handler.remote.stage) if not n.startswith("events.out.tfevents.")] == []


def test_past_max_pending_uploads_the_step_waits_for_the_upload(s3, gate, caplog):  # noqa: F811
    """Back-pressure: with one window allowed to wait, the step that ends the next window waits until
    the first is uploaded (training runs in a thread here, so the test can watch it wait)."""
    fs = fresh_bucket(s3, "bounded")
    gate.hold(b".pt.trace.json.gz.")  # window 0's trace
    _, prof = windows_profile("s3://bounded/logs/run", 2, digest=False, max_pending_uploads=1)
    steps_done = []

    def train():
        with prof:
            for step in range(4):
                work(prof, 1)
                steps_done.append(step)

    def waiting_said():
        return [r for r in caplog.records if "training waits for the upload" in r.getMessage()]

    trainer = threading.Thread(target=train)
    with caplog.at_level("WARNING"):
        trainer.start()
        try:
            gate.wait_held()
            deadline = time.monotonic() + HOLD_TIMEOUT_S
            while not waiting_said() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert waiting_said() and trainer.is_alive()
            assert steps_done == [0, 1, 2]  # step 3 ended window 1: it waits for window 0's upload
            assert not fs.glob("bounded/logs/run/*.canning.json")
        finally:
            gate.release()
            trainer.join(HOLD_TIMEOUT_S)
    assert steps_done == [0, 1, 2, 3]
    fs.invalidate_cache()
    assert len(fs.glob("bounded/logs/run/*.canning.json")) == 2


@pytest.mark.slow
def test_a_held_upload_on_one_gloo_rank_stalls_neither_rank(s3, gate, tmp_path):  # noqa: F811
    """examples/train_ddp.py on 2 gloo ranks: rank 0's first window waits at the gate while both ranks run
    every step (each step all-reduces across the ranks); released, all four windows land, in order."""
    pytest.importorskip("torch.distributed")
    from test_handler_ddp import free_port
    fs = fresh_bucket(s3, "ddp")
    gate.hold(b"/.rank0.")  # rank 0's first file under its temporary key
    port, procs, logs = free_port(), [], []
    for rank in range(2):
        env = {**os.environ, "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
               "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        logs.append(tmp_path / f"rank{rank}.log")
        with open(logs[-1], "w") as out:
            procs.append(subprocess.Popen([sys.executable, str(REPO / "examples" / "train_ddp.py"),
                                           "s3://ddp/logs/run", "10"], env=env, cwd=tmp_path, stdout=out,
                                          stderr=subprocess.STDOUT))
    try:
        gate.wait_held()
        deadline = time.monotonic() + 300
        while "step   9" not in logs[0].read_text() and time.monotonic() < deadline:
            assert all(p.poll() is None for p in procs), logs[0].read_text()
            time.sleep(0.2)
        assert "step   9" in logs[0].read_text()  # the last step ran, its window's upload still held
        assert gate.held.is_set() and not fs.glob("ddp/logs/run/rank0.*.canning.json")
    finally:
        gate.release()
        communicate_all(procs, 300)  # a rank that does not end is killed, not left uploading
        codes = [p.returncode for p in procs]
    assert codes == [0, 0], [log.read_text() for log in logs]
    fs.invalidate_cache()
    keys = [os.path.basename(k) for k in fs.find("ddp/logs/run")]
    assert not [k for k in keys if k.startswith(".")], keys
    manifests = sorted(k for k in keys if k.endswith(".canning.json"))
    ranks = sorted(json.loads(fs.cat(f"ddp/logs/run/{m}"))["rank"] for m in manifests)
    assert ranks == [0, 0, 1, 1]
    for rank in ("rank0.", "rank1."):  # each rank's windows published in window order
        mine = [m for m in final_manifest_puts(gate, "ddp") if m.startswith(rank)]
        assert mine == sorted(m for m in manifests if m.startswith(rank))


KILLED_RANK = """
import sys, torch
from canning import profiling_suite as ps
with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=ps.schedule(wait=0, warmup=1, active=1, repeat=1),
                on_trace_ready=ps.tensorboard_trace_handler(sys.argv[1], worker_name="w", digest=False)) as prof:
    for _ in range(2):
        torch.randn(64, 64).sum()
        prof.step()
print("stopped", flush=True)  # never reached: stop() waits for the held upload, and the rank is killed
"""


def test_a_rank_killed_mid_upload_leaves_only_temporary_keys_removed_at_the_next_start(s3, gate, tmp_path,  # noqa: F811
                                                                                       monkeypatch):
    from canning_tb.store import Store
    fs = fresh_bucket(s3, "killed")
    gate.hold(b".canning.json.")  # the trace is in under its temporary key; the manifest waits
    script = tmp_path / "rank.py"
    script.write_text(KILLED_RANK)
    rank = subprocess.Popen([sys.executable, str(script), "s3://killed/logs/run"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        gate.wait_held()
    finally:
        os.killpg(rank.pid, signal.SIGKILL)  # the whole rank, its uploader included, as a job scheduler does
        out = rank.communicate(timeout=60)[0]
    gate.release(forward=False)
    assert "stopped" not in out, out
    fs.invalidate_cache()
    keys = [os.path.basename(k) for k in fs.find("killed")]
    assert keys and all(k.startswith(".") and k.endswith(".tmp") for k in keys), keys
    assert any(".pt.trace.json.gz." in k for k in keys)  # a whole trace, but under its temporary key
    monkeypatch.setenv("CANNING_CACHE_DIR", str(tmp_path / "cache"))
    assert Store("s3://killed/logs").runs() == []  # no reader sees a window
    for pid in {int(k.rsplit(".", 2)[1]) for k in keys}:  # the uploader that wrote them is gone by now
        wait_ended(pid)
    # the next start on this host removes them, and its own window lands
    handler, prof = windows_profile("s3://killed/logs/run", 1, digest=False)
    with prof:
        work(prof, 2)
    fs.invalidate_cache()
    keys = [os.path.basename(k) for k in fs.find("killed")]
    assert not [k for k in keys if k.startswith(".")], keys
    assert len([k for k in keys if k.endswith(".canning.json")]) == 1


def test_a_bucket_removed_mid_run_is_said_once_and_later_windows_still_upload(s3, gate, caplog):  # noqa: F811
    fs = fresh_bucket(s3, "vanish")
    handler, prof = windows_profile("s3://vanish/logs/run", 3, digest=False)
    gate.hold(b"00001.pt.trace.json.gz.")  # window 1's trace upload
    with caplog.at_level("WARNING"), prof:
        work(prof, 4)
        gate.wait_held()  # window 0 is in; window 1's upload has started
        fs.rm("vanish", recursive=True)
        fs.invalidate_cache()
        assert not fs.exists("vanish")
        gate.hold(b"00002.pt.trace.json.gz.")
        gate.release()
        work(prof, 2)
        gate.wait_held()  # window 1 failed; window 2's upload has started: the bucket is back for it
        fs.mkdir("vanish")
        gate.release()
    said = [r.getMessage() for r in caplog.records if "could not write profiler window" in r.getMessage()]
    assert len(said) == 1, said
    assert re.search(r"window w\.\d{13}00001 into 's3://vanish/logs/run' "
                     r"\(s3://vanish/logs/run: no such bucket or path\)", said[0]), said[0]
    assert s3.secret not in said[0] and s3.key_id not in "".join(r.getMessage() for r in caplog.records)
    assert [m[-len("00000.canning.json"):] for m in final_manifest_puts(gate, "vanish")] == \
        ["00000.canning.json", "00002.canning.json"]
    fs.invalidate_cache()
    (landed,) = fs.glob("vanish/logs/run/*.canning.json")
    assert landed.endswith("00002.canning.json")
    assert not [n for n in os.listdir(handler.remote.stage) if ".pt.trace." in n or n.endswith(".canning.json")]


RAW_TORCH = """
import sys, torch
from canning import profiling_suite as ps
handler = ps.tensorboard_trace_handler(sys.argv[1], worker_name="raw", digest=False)
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], on_trace_ready=handler,
                            schedule=torch.profiler.schedule(wait=0, warmup=1, active=1, repeat=2)) as prof:
    for _ in range(4):
        torch.randn(64, 64).sum()
        prof.step()
"""


@pytest.mark.slow
def test_interpreter_exit_waits_for_the_uploads_of_a_raw_torch_profile(s3, tmp_path):  # noqa: F811
    """torch.profiler.profile never calls our stop(): the exit does. Its answers are read then, so a
    failure is said by the training process itself, and the windows that can land have landed."""
    fs = fresh_bucket(s3, "atexit")
    script = tmp_path / "raw.py"
    script.write_text(RAW_TORCH)
    temp = tmp_path / "tmp"  # the training process's temporary folder, where it stages its windows
    temp.mkdir()
    for url, landed in (("s3://atexit/logs/run", 2), ("s3://atexit-gone/logs/run", 0)):
        done = subprocess.run([sys.executable, str(script), url], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "TMPDIR": str(temp)})
        assert done.returncode == 0, done.stderr
        assert not [p.name for p in temp.iterdir() if p.name.startswith("canning-stage-")]  # nothing left behind
        said = [line for line in done.stderr.splitlines() if "could not write profiler window" in line]
        if landed:
            assert not said, done.stderr
            fs.invalidate_cache()
            assert len(fs.glob("atexit/logs/run/raw.*.canning.json")) == landed
        else:
            assert len(said) == 1 and re.search(r"window raw\.\d{18} into 's3://atexit-gone/logs/run' "
                                                r"\(s3://atexit-gone/logs/run: no such bucket or path\)", said[0])
            assert s3.secret not in done.stderr


def uploader_pids(url: str) -> list[int]:
    """The upload processes of this test process for url, read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as f:
                parent = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid() and b"canning_tb.handler.uploader" in argv and url.encode() in argv:
            found.append(int(entry))
    return found


def test_an_uploader_killed_alone_is_said_and_replaced(s3, gate, caplog):  # noqa: F811
    """The upload process dies (the OOM killer, a crash) with window 0 in hand: the training process says
    so, naming the window, and the next window is uploaded by a new one."""
    fs = fresh_bucket(s3, "replaced")
    gate.hold(b".pt.trace.json.gz.")
    _, prof = windows_profile("s3://replaced/logs/run", 2, digest=False)
    with caplog.at_level("WARNING"), prof:
        work(prof, 2)
        gate.wait_held()
        (pid,) = uploader_pids("s3://replaced/logs/run")
        os.kill(pid, signal.SIGKILL)
        wait_ended(pid)
        gate.release(forward=False)
        work(prof, 2)
    said = [r.getMessage() for r in caplog.records if "could not write profiler window" in r.getMessage()]
    assert len(said) == 1 and re.search(r"window w\.\d{13}00000 into 's3://replaced/logs/run' \(the upload process "
                                        r"exited \(code -9\) before uploading it\)", said[0]), said
    fs.invalidate_cache()
    (landed,) = fs.glob("replaced/logs/run/*.canning.json")
    assert landed.endswith("00001.canning.json")
    assert not [k for k in fs.find("replaced") if os.path.basename(k).startswith(".")]


def test_async_mode_with_a_remote_folder(s3, tmp_path, monkeypatch):  # noqa: F811
    """CPU: accepted (it is torch_npu's option); NPU (the fake torch_npu): the step does not wait for
    torch_npu's analysis, the uploader does, and the analysed folder lands with its digest."""
    fs = fresh_bucket(s3, "later")
    _, prof = windows_profile("s3://later/logs/cpu", 1, digest=False, async_mode=True)
    with prof:
        work(prof, 2)
    fs.invalidate_cache()
    assert len(fs.glob("later/logs/cpu/*.canning.json")) == 1

    from test_npu import NPU, _drop_double, fixture_output, use_double
    use_double(monkeypatch, "current", parse_s="2")
    try:
        handler = ps.tensorboard_trace_handler("s3://later/logs/npu", async_mode=True)
        with ps.Profile(activities=NPU, on_trace_ready=handler,
                        schedule=ps.schedule(wait=0, warmup=1, active=1, repeat=1)) as prof:
            work(prof, 2)  # the second step ended the window: torch_npu analyses it in the background
            (staged,) = [p for p in os.listdir(handler.remote.stage) if p.endswith("_ascend_pt")]
            assert not os.path.exists(os.path.join(handler.remote.stage, staged, OUT, "analyse.done"))
            assert not fs.glob("later/logs/npu/*.canning.json")
        # stop() returned: the window was published once torch_npu's analysis had ended
        fs.invalidate_cache()
        (manifest,) = fs.glob("later/logs/npu/*.canning.json")
        man = json.loads(fs.cat(manifest))
        assert man["analysis"] == "async" and man["kind"] == "ascend_pt" and man["files"][0]["name"] == staged
        landed = {os.path.basename(k) for k in fs.find(f"later/logs/npu/{staged}/{OUT}")}
        assert "analyse.done" in landed and {p.name for p in fixture_output().iterdir()} <= landed
        # its digest at the source follows, beside it (the viewer then reads a few KB)
        from canning_tb.analysis import digest_pb2
        deadline = time.monotonic() + 120
        while not (digests := fs.glob("later/logs/npu/*.digest.pb")) and time.monotonic() < deadline:
            time.sleep(0.5)
            fs.invalidate_cache()
        digest = digest_pb2.Digest.FromString(fs.cat(digests[0]))
        assert digest.ops_by_name
    finally:
        _drop_double()
