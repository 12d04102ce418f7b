"""Ascend benchmark: canning-tb against torch-tb-profiler-ascend 0.4.0.11 and msprof-analyze on grown real ranks.

    python benchmarks/bench_ascend.py [--sizes small medium long] [--timeout 1800] [--only tbprof msprof ours db]

Per size (small ≈ 88 MB: 32 copies of the level2 rank; medium ≈ 360 MB: 128; long ≈ 1 GB: 360), in one run,
each tool in its own fresh process, one after another (measure.py: wall time, CPU, peak RSS of the tree):
 1. the rank: benchmarks/grow_ascend.py grows tests/fixtures' ascend/level2 rank0 (or --src) into
    out/ascend/<size>/run/worker0_0_ascend_pt, and its SQLite export (db_level2 rank0, the same copies) into
    out/ascend/<size>/db_run/worker0_0_ascend_pt (both cached: regenerated when the copies change);
 2. torch-tb-profiler-ascend in its own venv (benchmarks/.venvs/tbprof_ascend), inside a real TensorBoard until
    the run is loaded (peers/tbprof_ascend_tb.py); msprof-analyze's cluster analysis (.venv-peers, peers/msprof_load.py);
 3. ours cold (cache removed) and warm, on the text export and on the SQLite export (ours_cold.py / ours_warm.py),
    our sources byte-compiled first as pip compiles the peers' (bench_ingest.compile_ours);
 4. a table on stdout (times, CPU, peak RSS, ratios) and out/results_ascend.json / out/results_ascend.md.
The load average (`uptime`) is recorded before and after every tool.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_ingest import ensure_venv, fmt_mib, log, run_one  # noqa: E402
import bench_ingest  # noqa: E402

COPIES = {"tiny": 4, "small": 32, "medium": 128, "long": 360}  # tiny: a smoke test of the harness
FIXTURES = os.environ.get("CANNING_FIXTURES", os.path.join(ROOT, "tests", "fixtures"))
bench_ingest.PEERS["tbprof_ascend"] = ["torch-tb-profiler-ascend==0.4.0.11", "tensorboard", "pandas"]
TARGETS = {"speedup_medium": 10.0, "rss_over_folder": 1.0, "long_cold_s": 15.0}
WORKER = "worker0_0_ascend_pt"  # torch-tb-profiler-ascend lists only {worker}_{number}_ascend_pt folders


def _load() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def folder_bytes(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)


def ensure_rank(src: str, run: str, copies: int) -> dict:
    """The grown rank (cached by its copies); its size and copies."""
    info_path = run + ".info.json"
    if os.path.exists(info_path):
        with open(info_path) as f:
            info = json.load(f)
        if info.get("copies") == copies and info.get("src") == src:
            return info
    log(f"growing {src} x {copies} -> {run}")
    shutil.rmtree(run, ignore_errors=True)
    subprocess.run([sys.executable, os.path.join(HERE, "grow_ascend.py"), "--src", src, "--out",
                    os.path.join(run, WORKER), "--copies", str(copies)], check=True, stdout=subprocess.DEVNULL)
    info = {"copies": copies, "src": src, "bytes": folder_bytes(run),
            "trace_bytes": _size(os.path.join(run, WORKER, "ASCEND_PROFILER_OUTPUT", "trace_view.json"))}
    with open(info_path, "w") as f:
        json.dump(info, f)
    return info


def _size(path: str) -> int:
    return os.path.getsize(path) if os.path.exists(path) else 0


def _measured(label, cmd, timeout, logs, rows) -> None:
    before = _load()
    r = run_one(label, cmd, timeout, logs)
    r["load_before"], r["load_after"] = before, _load()
    rows[label] = r


def bench_size(size: str, a, out_root: str) -> dict:
    base = os.path.join(out_root, "ascend", size)
    logs = os.path.join(base, "logs")
    os.makedirs(logs, exist_ok=True)
    copies = COPIES[size]
    text = ensure_rank(os.path.join(FIXTURES, "ascend", "level2", "rank0_ascend_pt"), os.path.join(base, "run"), copies)
    db = ensure_rank(os.path.join(FIXTURES, "ascend", "db_level2", "rank0_ascend_pt"), os.path.join(base, "db_run"),
                     copies) if "db" in a.only else None
    rows: dict = {}
    run = os.path.join(base, "run")
    if "tbprof" in a.only:
        py = ensure_venv("tbprof_ascend", a.base_python)
        _measured("torch-tb-profiler-ascend 0.4.0.11", [py, os.path.join(HERE, "peers", "tbprof_ascend_tb.py"), run,
                                                        str(a.timeout)], a.timeout + 60, logs, rows)
    if "msprof" in a.only and os.path.exists(a.peers_python):
        cluster = os.path.join(base, "msprof_in")
        shutil.rmtree(cluster, ignore_errors=True)
        os.makedirs(cluster)
        os.symlink(os.path.join(run, WORKER), os.path.join(cluster, WORKER))
        _measured("msprof-analyze 26.2.0", [a.peers_python, os.path.join(HERE, "peers", "msprof_load.py"), cluster,
                                            os.path.join(base, "msprof_out")], a.timeout, logs, rows)
    if "ours" in a.only:
        bench_ingest.compile_ours()
        for label, folder, name in (("ours cold", run, "trace_view.json"),) + (
                (("ours cold, SQLite export", os.path.join(base, "db_run"), "ascend_pytorch_profiler_0.db"),)
                if db else ()):
            cache = os.path.join(base, "cache" + ("_db" if "SQLite" in label else ""))
            args = [folder, name, cache]
            _measured(label, [sys.executable, os.path.join(HERE, "ours_cold.py"), *args], a.timeout, logs, rows)
            if rows[label]["status"] == "ok":
                _measured(label.replace("cold", "warm"), [sys.executable, os.path.join(HERE, "ours_warm.py"), *args],
                          a.timeout, logs, rows)
    return {"copies": copies, "text": text, "db": db, "rows": rows, "summary": summarize(rows, text, db),
            "when": datetime.datetime.now().strftime("%Y-%m-%d %H:%M")}


def _ratio(a, b):
    return round(a / b, 2) if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b else "-"


def summarize(rows: dict, text: dict, db: dict | None) -> dict:
    s = {}
    cold = rows.get("ours cold")
    for peer in ("torch-tb-profiler-ascend 0.4.0.11", "msprof-analyze 26.2.0"):
        p = rows.get(peer)
        if p and cold and p["status"] == "ok" and cold["status"] == "ok":
            s[f"speedup_vs_{peer}"] = {"work": _ratio(p["work_s"], cold["work_s"]),
                                       "wall": _ratio(p["wall_s"], cold["wall_s"]), "cpu": _ratio(p["cpu_s"], cold["cpu_s"])}
    if cold and cold["status"] == "ok":
        s["ours_peak_over_folder"] = _ratio(cold["peak_rss"], text["bytes"])
    dbc = rows.get("ours cold, SQLite export")
    if db and dbc and dbc["status"] == "ok":
        s["ours_db_peak_over_folder"] = _ratio(dbc["peak_rss"], db["bytes"])
    return s


def markdown(results: dict) -> str:
    out = []
    for size, res in results.items():
        t, d = res["text"], res.get("db")
        out.append(f"### Ascend, {size}: level2 rank x {res['copies']}: folder {t['bytes'] / 1e6:,.0f} MB "
                   f"(trace_view.json {t['trace_bytes'] / 1e6:,.0f} MB)"
                   + (f"; its SQLite export {d['bytes'] / 1e6:,.0f} MB" if d else "") + f". Measured {res['when']}.\n")
        out.append("| tool | status | work (s) | process wall (s) | process CPU (s) | peak RSS (tree) | peak / folder "
                   "| load avg before / after |")
        out.append("|---|---|---:|---:|---:|---:|---:|---|")
        for r in res["rows"].values():
            folder = d["bytes"] if d and "SQLite" in r["tool"] else t["bytes"]
            w = f"{r['work_s']:.2f}" if isinstance(r.get("work_s"), (int, float)) else "-"
            out.append(f"| {r['tool']} | {r['status']} | {w} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
                       f"{fmt_mib(r.get('peak_rss'))} | {r.get('peak_rss', 0) / folder:.2f}x | "
                       f"{r.get('load_before')} / {r.get('load_after')} |")
        out.append("")
        for k, v in res["summary"].items():
            out.append(f"- {k}: {v}")
        out.append("")
    out.append("work: torch-tb-profiler-ascend = TensorBoard answering -> its /runs lists the run with loading false "
               "(TensorBoard's own start not counted); msprof-analyze = the `-m all` CLI run; ours = imports + Store "
               "discovery + digest (cold: cache removed; warm: from the cache). Peak RSS: the largest sum over the "
               "process tree (sampled every 20 ms), or the largest single process if higher.\n")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="*", choices=sorted(COPIES), default=["small", "medium"])
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--only", nargs="*", choices=["tbprof", "msprof", "ours", "db"],
                    default=["tbprof", "msprof", "ours", "db"])
    ap.add_argument("--base-python", default=os.environ.get("BENCH_BASE_PYTHON", "python3"))
    ap.add_argument("--peers-python", default=os.path.join(ROOT, ".venv-peers", "bin", "python"))
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    a = ap.parse_args(argv)
    out_root = os.path.abspath(a.out)
    path = os.path.join(out_root, "results_ascend.json")
    results = {}
    if os.path.exists(path):
        with open(path) as f:
            results = json.load(f)
    for size in a.sizes:
        res = bench_size(size, a, out_root)
        prev = results.get(size, {})
        if prev.get("copies") == res["copies"]:
            res["rows"] = {**prev.get("rows", {}), **res["rows"]}
            res["summary"] = summarize(res["rows"], res["text"], res["db"])
        results[size] = res
        with open(path, "w") as f:
            json.dump(results, f, indent=1)
    md = markdown({k: results[k] for k in sorted(results, key=list(COPIES).index)})
    with open(os.path.join(out_root, "results_ascend.md"), "w") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
