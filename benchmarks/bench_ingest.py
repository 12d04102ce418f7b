"""Ingest benchmark: canning-tb against torch-tb-profiler 0.4.3 and HTA 0.5.0 on one big real trace.

    python benchmarks/bench_ingest.py [--size small|medium|long] [--timeout 900] [--skip-peers] [--only ...]

Steps (each tool in its own fresh process, one after another, measured by measure.py: wall time, peak RSS):
 1. the trace: make_big_trace.py into benchmarks/out/<size>/run/ (cached when the size is right);
 2. the peers' venvs in benchmarks/.venvs/ (created once; a marker file records what was installed);
 3. torch-tb-profiler: RunLoader(...).load() on the run folder (peers/tbprof_load.py);
    HTA: TraceAnalysis(trace_dir=...) on a folder holding only a symlink to the trace (peers/hta_load.py);
    ours cold (ours_cold.py, cache removed first), then ours warm (ours_warm.py, same cache);
 4. a table on stdout, benchmarks/out/results.json (all sizes measured so far) and benchmarks/out/results.md.
Runs under the project venv (.venv); the peers run under their own venvs.
"""
from __future__ import annotations

import argparse
import datetime
import glob
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from measure import measure  # noqa: E402

SIZES_MB = {"small": 20, "medium": 300, "long": 1000}
VENVS = os.path.join(HERE, ".venvs")
# name -> pip requirements (the marker in the venv records them; change them and the venv is rebuilt)
PEERS = {
    "tbprof": ["torch-tb-profiler==0.4.3", "tensorboard", "pandas"],
    "hta": ["holistictraceanalysis==0.5.0"],
}
TARGETS = {"speedup": 10.0, "rss_over_trace": 1.5, "warm_s": 0.5}


def log(msg: str) -> None:
    print(f"[bench {datetime.datetime.now():%H:%M:%S}] {msg}", flush=True)


def ensure_venv(name: str, base_python: str) -> str:
    """Create benchmarks/.venvs/<name> with PEERS[name] once; return its python."""
    vdir = os.path.join(VENVS, name)
    py = os.path.join(vdir, "bin", "python")
    marker = os.path.join(vdir, ".bench-installed")
    want = "\n".join(PEERS[name])
    if os.path.exists(marker) and open(marker).read() == want and os.path.exists(py):
        return py
    log(f"creating venv {vdir}: {' '.join(PEERS[name])}")
    shutil.rmtree(vdir, ignore_errors=True)
    subprocess.run([base_python, "-m", "venv", vdir], check=True)
    subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *PEERS[name]], check=True)
    with open(marker, "w") as f:
        f.write(want)
    return py


def ensure_trace(size: str, out_root: str) -> tuple[str, dict]:
    run_dir = os.path.join(out_root, size, "run")
    subprocess.run([sys.executable, os.path.join(HERE, "make_big_trace.py"), "--target-mb", str(SIZES_MB[size]),
                    "--out", run_dir], check=True)
    with open(os.path.join(out_root, size, "trace_info.json")) as f:
        info = json.load(f)
    return run_dir, info


def hta_dir_for(run_dir: str, trace_name: str) -> str:
    d = os.path.join(os.path.dirname(run_dir), "hta")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    os.symlink(os.path.join(run_dir, trace_name), os.path.join(d, trace_name))
    return d


def run_one(label: str, cmd: list[str], timeout: float, log_dir: str, env_extra: dict | None = None) -> dict:
    log(f"{label}: {' '.join(os.path.relpath(c, ROOT) if os.path.isabs(c) else c for c in cmd)}")
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(env_extra or {}))
    log_path = os.path.join(log_dir, label.replace(" ", "_") + ".stderr.log")
    r = measure(cmd, timeout, env=env, cwd=ROOT, log_path=log_path)
    cj = r.get("child_json") or {}
    work = cj.get("load_s", cj.get("work_s"))
    status = "timeout" if r["timed_out"] else ("ok" if r["rc"] == 0 and cj.get("ok") else "error")
    res = {"tool": label, "status": status, "wall_s": r["wall_s"], "work_s": work, "cpu_s": r["cpu_s"], "rc": r["rc"],
           # sampling can miss a short peak; the wait4 max of the largest single process cannot
           "peak_rss": max(r["peak_tree_rss"], r["maxrss_children"]),
           "peak_tree_rss": r["peak_tree_rss"], "maxrss_children": r["maxrss_children"], "detail": cj,
           "stderr_log": os.path.relpath(log_path, ROOT)}
    if status == "error":
        with open(log_path, errors="replace") as f:
            res["error_tail"] = f.read()[-1500:]
    log(f"{label}: {status}  wall {r['wall_s']:.2f} s  work {work} s  cpu {r['cpu_s']:.2f} s  peak RSS "
        f"{r['peak_tree_rss'] / 2**20:.0f} MiB (tree) / {r['maxrss_children'] / 2**20:.0f} MiB (max single)")
    return res


def ours_available() -> str | None:
    """None when our pipeline can be imported, else what is missing."""
    missing = [m for m in ("canning_tb.store", "canning_tb.ingest.kineto.read", "canning_tb.analysis.build")
               if importlib.util.find_spec(m) is None]
    return ", ".join(missing) or None


def compile_ours() -> None:
    """Byte-compile our sources before we are measured, as pip does for every peer when it installs it: our
    editable install under PYTHONDONTWRITEBYTECODE=1 would compile each module again in every measured run."""
    import compileall
    compileall.compile_dir(os.path.join(ROOT, "src", "canning_tb"), quiet=1)


def _ratio(a, b):
    return round(a / b, 2) if a and b else "-"


def summarize(size: str, info: dict, rows: dict) -> dict:
    cold, warm = rows.get("ours cold"), rows.get("ours warm")
    ok = lambda r: r is not None and r["status"] == "ok"  # noqa: E731
    s: dict = {}
    for peer in ("torch-tb-profiler 0.4.3", "HTA 0.5.0"):
        p = rows.get(peer)
        if ok(p) and ok(cold):
            s[f"speedup_vs_{peer}"] = {"work": _ratio(p["work_s"], cold["work_s"]),
                                       "wall": _ratio(p["wall_s"], cold["wall_s"]),
                                       "cpu": _ratio(p.get("cpu_s"), cold.get("cpu_s"))}
        elif p is not None and p["status"] == "timeout" and ok(cold):
            s[f"speedup_vs_{peer}"] = {"work": f">{_ratio(p['wall_s'], cold['work_s'])}",
                                       "wall": f">{_ratio(p['wall_s'], cold['wall_s'])}", "cpu": "-"}
    if ok(cold):
        s["ours_peak_rss_over_trace"] = _ratio(cold["peak_rss"], info["bytes"])
    if ok(warm):
        s["warm_work_s"], s["warm_wall_s"] = warm["work_s"], warm["wall_s"]
        s["warm_reopen_imported_s"] = warm["detail"].get("reopen_imported_s")
    return s


def fmt_mib(b):
    return f"{b / 2**20:,.0f} MiB" if b else "-"


def markdown(all_results: dict) -> str:
    out = []
    for size, res in all_results.items():
        info, rows, s = res["trace"], res["rows"], res["summary"]
        out.append(f"### Ingest, {size} trace: {info['bytes'] / 1e6:,.0f} MB uncompressed, {info['events']:,} events\n")
        out.append(f"{info.get('model', '')}; torch.profiler with {info.get('profiler', '')}, "
                   f"torch {info.get('torch', '?')}. Machine: {res['machine']}. Measured {res['when']}.\n")
        out.append("| tool | status | work (s) | process wall (s) | process CPU (s) | peak RSS, process tree "
                   "| peak RSS / trace |")
        out.append("|---|---|---:|---:|---:|---:|---:|")
        for r in rows.values():
            w = f"{r['work_s']:.2f}" if isinstance(r.get("work_s"), (int, float)) else "-"
            mode = r["detail"].get("mode", "")
            name = r["tool"] + (f" ({mode})" if mode and "Store" not in mode else "")
            cpu = f"{r['cpu_s']:.2f}" if isinstance(r.get("cpu_s"), (int, float)) else "-"
            out.append(f"| {name} | {r['status']} | {w} | {r['wall_s']:.2f} | {cpu} | {fmt_mib(r.get('peak_rss'))} | "
                       f"{r.get('peak_rss', 0) / info['bytes']:.2f}× |")
        out.append("")
        lines = []
        for k, v in s.items():
            if k.startswith("speedup_vs_"):
                lines.append(f"- cold speed-up vs {k[11:]}: {v['work']}× (work), {v['wall']}× (process wall), "
                             f"{v.get('cpu', '-')}× (process CPU); "
                             f"target ≥ {TARGETS['speedup']:.0f}×")
        if "ours_peak_rss_over_trace" in s:
            lines.append(f"- our peak RSS / trace size: {s['ours_peak_rss_over_trace']}×; "
                         f"target ≤ {TARGETS['rss_over_trace']}×")
        if "warm_work_s" in s:
            lines.append(f"- warm reopen: {s['warm_work_s']} s (work, imports included), {s['warm_wall_s']} s "
                         f"(process wall), {s.get('warm_reopen_imported_s')} s (again in the same process, modules "
                         f"imported: a running TensorBoard); target < {TARGETS['warm_s']} s")
        if res.get("ours_missing"):
            lines.append(f"- ours not measured: missing {res['ours_missing']}")
        out += lines + [""]
    out.append("work = time inside the process for the load itself (tbprof: `RunLoader.load()`, HTA: "
               "`TraceAnalysis(...)`, ours: imports + `Store` discovery + `digest()`); process wall = fresh "
               "interpreter to exit; process CPU = user + system seconds of the process and its waited-for "
               "children (`wait4`), the figure least disturbed by other load on the machine. Peak RSS = largest "
               "sum of RSS over the process and its children (sampled every 20 ms from /proc), or the "
               "largest single process's `ru_maxrss` if that is higher.\n")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", choices=sorted(SIZES_MB), default="medium")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per tool before it is killed")
    ap.add_argument("--only", nargs="*", choices=["tbprof", "hta", "ours"], default=None)
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--base-python", default=os.environ.get("BENCH_BASE_PYTHON", "python3"),
                    help="python used to create the peers' venvs (3.11 tested)")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    a = ap.parse_args(argv)
    which = set(a.only or ["tbprof", "hta", "ours"])
    if a.skip_peers:
        which -= {"tbprof", "hta"}

    out_root = os.path.abspath(a.out)
    run_dir, info = ensure_trace(a.size, out_root)
    trace_name = info["file"]
    log(f"trace: {os.path.join(run_dir, trace_name)}  {info['bytes'] / 1e6:,.1f} MB  {info['events']:,} events")
    log_dir = os.path.join(out_root, a.size, "logs")
    os.makedirs(log_dir, exist_ok=True)

    rows: dict = {}
    if "tbprof" in which:
        py = ensure_venv("tbprof", a.base_python)
        # spawn is the plugin's default start method (TORCH_PROFILER_START_METHOD); keep it
        rows["torch-tb-profiler 0.4.3"] = run_one(
            "torch-tb-profiler 0.4.3", [py, os.path.join(HERE, "peers", "tbprof_load.py"), run_dir], a.timeout, log_dir)
    if "hta" in which:
        py = ensure_venv("hta", a.base_python)
        rows["HTA 0.5.0"] = run_one("HTA 0.5.0", [py, os.path.join(HERE, "peers", "hta_load.py"),
                                                  hta_dir_for(run_dir, trace_name)], a.timeout, log_dir)
    missing = None
    if "ours" in which:
        missing = ours_available()
        compile_ours()
        cache_dir = os.path.join(out_root, a.size, "cache")
        args = [run_dir, trace_name, cache_dir]
        if missing:
            log(f"ours: not measured, missing {missing}")
        else:
            rows["ours cold"] = run_one("ours cold", [sys.executable, os.path.join(HERE, "ours_cold.py"), *args],
                                        a.timeout, log_dir)
            if rows["ours cold"]["status"] == "ok":
                rows["ours warm"] = run_one("ours warm", [sys.executable, os.path.join(HERE, "ours_warm.py"), *args],
                                            a.timeout, log_dir)

    res_path = os.path.join(out_root, "results.json")
    all_results = {}
    if os.path.exists(res_path):
        try:
            with open(res_path) as f:
                all_results = json.load(f)
        except ValueError:
            pass
    prev = all_results.get(a.size, {})
    if prev.get("trace", {}).get("file") == trace_name:  # keep rows measured earlier on the same file
        rows = {**prev.get("rows", {}), **rows}
    order = ["torch-tb-profiler 0.4.3", "HTA 0.5.0", "ours cold", "ours warm"]
    rows = {k: rows[k] for k in order if k in rows}
    all_results[a.size] = {
        "trace": info, "rows": rows, "summary": summarize(a.size, info, rows), "ours_missing": missing,
        "when": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "machine": f"{os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
                   f"Python {platform.python_version()}",
        "targets": TARGETS,
    }
    with open(res_path + ".tmp", "w") as f:
        json.dump(all_results, f, indent=1)
    os.replace(res_path + ".tmp", res_path)
    md = markdown({a.size: all_results[a.size]} | {k: v for k, v in all_results.items() if k != a.size})
    with open(os.path.join(out_root, "results.md"), "w") as f:
        f.write(md)
    print()
    print(md)
    log(f"wrote {os.path.relpath(res_path, ROOT)} and {os.path.relpath(os.path.join(out_root, 'results.md'), ROOT)}")
    return 0 if all(r["status"] == "ok" for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
