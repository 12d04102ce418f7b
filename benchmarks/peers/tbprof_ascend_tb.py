"""Peer: torch-tb-profiler-ascend 0.4.0.11 loading one run inside a real TensorBoard, as a user meets it.

Run with the peer's own venv (benchmarks/.venvs/tbprof_ascend):
    python benchmarks/peers/tbprof_ascend_tb.py <logdir> [timeout_s]

Starts `tensorboard --logdir <logdir>` (a child process: the caller measures the whole tree's memory), waits
until TensorBoard answers, then polls the plugin's /runs route until the run is listed and `loading` is
false: the plugin has parsed every `{worker}_{number}_ascend_pt` folder and built its views. Last stdout
line: JSON with load_s (TensorBoard answering -> run loaded, TensorBoard's own start not counted),
start_s (process start -> TensorBoard answering) and total_s.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.loads(r.read().decode())
    except Exception:
        return None


def main() -> int:
    logdir, timeout = os.path.abspath(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 1800
    port = _free_port()
    t0 = time.perf_counter()
    tb = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", logdir, "--host", "127.0.0.1",
                           "--port", str(port), "--reload_interval", "0"], stdout=subprocess.DEVNULL,
                          start_new_session=True)  # stderr: this script's, which the benchmark logs
    base = f"http://127.0.0.1:{port}"
    t_up = t_loaded = None
    runs = []
    try:
        while time.perf_counter() - t0 < timeout and tb.poll() is None:
            if t_up is None:
                if _get(f"{base}/data/plugins_listing") is not None:
                    t_up = time.perf_counter()
                else:
                    time.sleep(0.1)
                    continue
            got = _get(f"{base}/data/plugin/pytorch_profiler/runs")
            if got and got.get("runs") and not got.get("loading"):
                t_loaded, runs = time.perf_counter(), got["runs"]
                break
            time.sleep(0.2)
    finally:
        os.killpg(tb.pid, signal.SIGTERM)
        try:
            tb.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(tb.pid, signal.SIGKILL)
    ok = t_loaded is not None
    print(json.dumps({"tool": "torch-tb-profiler-ascend 0.4.0.11", "ok": ok, "mode": "TensorBoard /runs until loaded",
                      "load_s": round(t_loaded - t_up, 3) if ok else None,
                      "start_s": round(t_up - t0, 3) if t_up else None,
                      "total_s": round(t_loaded - t0, 3) if ok else None, "runs": runs}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
