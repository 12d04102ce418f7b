"""Peer: torch-tb-profiler 0.4.3 loading one run, the way TensorBoard does it.

Run with the peer's own venv (benchmarks/.venvs/tbprof):
    python benchmarks/peers/tbprof_load.py <run_dir>

Mirrors TorchProfilerPlugin._load_run: an io.Cache over a fresh temp folder, then
RunLoader(name, run_dir, cache).load(), which starts one worker process per trace file (spawn by default,
TORCH_PROFILER_START_METHOD=fork to fork), parses it (RunProfileData.parse), builds every precomputed view
(RunGenerator.generate_run_profile), sends the RunProfile back over an mp.Queue, and returns the Run.
Last stdout line: JSON with load_s (RunLoader.load only) and what was built.
"""
import json
import os
import shutil
import sys
import tempfile
import time


def main() -> int:
    run_dir = os.path.abspath(sys.argv[1])
    t_imp = time.perf_counter()
    from torch_tb_profiler import io
    from torch_tb_profiler.profiler import RunLoader
    import_s = time.perf_counter() - t_imp

    tmp = tempfile.mkdtemp(prefix="tbprof-bench-")
    cache = io.Cache(tmp)
    try:
        t0 = time.perf_counter()
        run = RunLoader(os.path.basename(run_dir), run_dir, cache).load()
        load_s = time.perf_counter() - t0
        profiles = run.get_profiles()
        ok = bool(profiles) and all(p is not None for p in profiles)
        views = sorted({str(getattr(v, "display_name", v)) for v in run.views}) if ok else []
        print(json.dumps({"tool": "torch-tb-profiler 0.4.3", "ok": ok, "load_s": round(load_s, 3),
                          "import_s": round(import_s, 3), "profiles": len(profiles), "workers": run.workers,
                          "views": views,
                          "start_method": os.getenv("TORCH_PROFILER_START_METHOD", "spawn")}))
        return 0 if ok else 1
    finally:
        try:
            cache.__exit__(None, None, None)
        except Exception:
            pass
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
