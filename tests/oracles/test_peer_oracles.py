"""Our digest against peer tools run on the same real fixtures (peer tools as test oracles).

The peers run in their own venv (`make peers` -> .venv-peers) as subprocesses, through the helper
scripts in tests/peers/, which write the peer's numbers as JSON; the comparison runs here.

HTA 0.5.0 (Kineto GPU traces):
- HTA `compute_time` = |union of COMPUTATION kernels| = our sum over steps of compute_ns +
  overlapped_ns (|union of KERNEL| inside the steps).
- HTA `non_compute_time` = |union of all GPU events (stream != -1)| - compute = our sum of
  communication_ns + memcpy_ns + memset_ns (the device categories below compute in priority).
- HTA `comp_comm_overlap_pctg` = 100 |COMP ∩ COMM| / |COMM| (rounded to 2 decimals) = our
  100 * sum(overlapped_ns) / (sum(overlapped_ns) + sum(communication_ns)).
- Window: HTA keeps the kernels launched by CPU ops before the start of the last ProfilerStep
  (default) or before the end of the last one (`include_last_profiler_step=True`) when the trace
  has more than one step, all kernels otherwise. We compare with our steps[:-1] resp. all steps.
- HTA `idle_time` / `kernel_time` (first device start to last device end) are not compared: the
  digest has no whole-window device span (our idle is measured inside host-based step spans).
- Rounding: on traces with float µs timestamps HTA ceils every start and floors every end to whole
  µs; its own switch HTA_DISABLE_NS_ROUNDING keeps them, and then the numbers match to the float64
  resolution of µs timestamps (~1 ns, tolerance 2 ns per kernel). With the rounding on, HTA's
  compute is smaller than ours by at most 2 µs per compute interval (checked as a bound).
  Integer-µs traces (dlrm, df_index_resolver) are compared exactly (tolerance 1 ns).

msprof-analyze 26.2.0 (torch_npu Ascend output, level1, 2 ranks), `-m all`:
- cluster_step_trace_time.csv per rank: Computing = compute_ns + overlapped_ns, Communication
  (Not Overlapped) = communication_ns, Overlapped = overlapped_ns, Communication = communication
  total_ns. Tolerance 1 µs: msprof sums float µs (3 decimals) per event, our reader converts each
  event to integer ns once; seen differences are <= 20 ns.
- Free is not equal by design: CANN's step is its device "Step" range (Stage), ours the
  ProfilerStep extended to its device work; so we check that the whole Free difference is the
  step-span difference: (our step - Computing - Comm(NO)) - Free == our step - Stage (1 µs).
- cluster_communication.json per rank: per op Elapse vs our CommCall dur_ns (matched on start
  time, 1 µs); per group the sums of Elapse / Transit / Wait vs our CollectiveStat total_ns /
  transfer_ns / wait_ns (1 µs per op). Transit and Wait come, in both tools, from the same
  per-rank communication.json, so these check our units and summing, not a second measurement;
  Elapse is ours from the device task events.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import REPO, fixture_path

pytestmark = [pytest.mark.slow, pytest.mark.peer_oracle]  # peer_oracle: kept by `make mutants`

# CANNING_PEERS_PYTHON: another interpreter with the same peers installed (default: `make peers`)
PEERS_PY = Path(os.environ.get("CANNING_PEERS_PYTHON", REPO / ".venv-peers" / "bin" / "python"))
PEERS_DIR = REPO / "tests" / "peers"


def _peer_python() -> Path:
    if not PEERS_PY.exists():
        pytest.skip(f"peer tools interpreter {PEERS_PY} absent: run `make peers` "
                    "(holistictraceanalysis 0.5.0 + msprof-analyze) to enable the peer oracle tests")
    return PEERS_PY


def _run_peer(script: str, *args: str, timeout: int = 300) -> None:
    p = subprocess.run([str(_peer_python()), str(PEERS_DIR / script), *map(str, args)], capture_output=True,
                       text=True, timeout=timeout, cwd=REPO)
    if p.returncode != 0:
        pytest.fail(f"{script} {' '.join(map(str, args))} failed (rc {p.returncode}):\n{(p.stdout + p.stderr)[-4000:]}")


def _hta(tmp: Path, fixture: tuple[str, ...], *flags: str) -> dict:
    """HTA on a copy of the fixture folder (HTA reads every *.json / *.gz in its trace_dir)."""
    src = fixture_path(*fixture)
    d = tmp / "traces"
    if not d.exists():
        d.mkdir()
        for f in sorted(src.iterdir()):
            if f.name.endswith((".json", ".json.gz")):
                shutil.copy(f, d / f.name)
    out = tmp / ("hta" + "".join(flags) + ".json")
    _run_peer("hta_oracle.py", d, out, *flags)
    return json.loads(out.read_text())


def _digests(folder: Path) -> dict[int, object]:
    from canning_tb.analysis.build import build_digest
    from canning_tb.ingest.kineto.read import read_kineto
    out = {}
    for f in sorted(folder.iterdir()):
        if f.name.endswith((".json", ".json.gz")):
            d = build_digest(read_kineto(str(f)))
            out[int(d.window.rank)] = d
    return out


def _sums(steps) -> dict[str, int]:
    s = defaultdict(int)
    for st in steps:
        b = st.breakdown
        for f in ("compute_ns", "overlapped_ns", "communication_ns", "memcpy_ns", "memset_ns"):
            s[f] += getattr(b, f)
    return s


def _ours(steps) -> dict[str, float]:
    s = _sums(steps)
    comm = s["overlapped_ns"] + s["communication_ns"]
    return {"compute_us": (s["compute_ns"] + s["overlapped_ns"]) / 1e3,
            "non_compute_us": (s["communication_ns"] + s["memcpy_ns"] + s["memset_ns"]) / 1e3,
            "overlap_pctg": round(100 * s["overlapped_ns"] / comm, 2) if comm else float("nan")}


def _compare_hta(hta: dict, digests: dict, drop_last: bool, tol_us) -> list[str]:
    errors = []
    for rank, d in sorted(digests.items()):
        h = hta["ranks"][str(rank)]
        steps = list(d.steps)
        if drop_last and len(steps) > 1:
            steps = steps[:-1]
        o = _ours(steps)
        n = sum(h["kernels_by_type"].values())
        tol = tol_us(n)
        for k in ("compute_us", "non_compute_us"):
            if abs(o[k] - h[k]) > tol:
                errors.append(f"rank {rank} {k}: ours {o[k]:.3f} HTA {h[k]:.3f} (tol {tol:.3f} µs)")
        hp = h["comp_comm_overlap_pctg"]
        if not (hp != hp and o["overlap_pctg"] != o["overlap_pctg"]) and abs(o["overlap_pctg"] - hp) > 0.01 + 1e-9:
            errors.append(f"rank {rank} overlap %: ours {o['overlap_pctg']} HTA {hp}")
    return errors


def test_hta_dlrm_8ranks(tmp_path):
    """8 ranks, one step each (HTA filters nothing), integer-µs timestamps: exact."""
    hta = _hta(tmp_path, ("param", "dlrm_8ranks"))
    digests = _digests(tmp_path / "traces")
    assert sorted(digests) == list(range(8)) == sorted(map(int, hta["ranks"]))
    assert _compare_hta(hta, digests, drop_last=False, tol_us=lambda n: 1e-3) == []


def test_hta_df_index_resolver_drops_last_step(tmp_path):
    """5 steps; HTA's default drops the last (incomplete) profiler step: vs our steps[:-1]."""
    hta = _hta(tmp_path, ("hta", "df_index_resolver"))
    digests = _digests(tmp_path / "traces")
    assert len(next(iter(digests.values())).steps) > 1
    assert _compare_hta(hta, digests, drop_last=True, tol_us=lambda n: 1e-3) == []


def test_hta_nccl_ns_resolution(tmp_path):
    """Float-µs (ns resolution) trace with NCCL kernels overlapping compute; both HTA windows."""
    digests = _digests(Path(fixture_path("hta", "nccl_parser_config")))
    tmp_a, tmp_b, tmp_c = (tmp_path / x for x in "abc")
    for t in (tmp_a, tmp_b, tmp_c):
        t.mkdir()
    exact = _hta(tmp_a, ("hta", "nccl_parser_config"), "--no-ns-rounding")
    assert _compare_hta(exact, digests, drop_last=True, tol_us=lambda n: 2e-3 * n) == []
    exact_all = _hta(tmp_b, ("hta", "nccl_parser_config"), "--no-ns-rounding", "--include-last-step")
    assert _compare_hta(exact_all, digests, drop_last=False, tol_us=lambda n: 2e-3 * n) == []
    # HTA's default rounding (ceil start, floor end to whole µs) only shrinks intervals
    rounded = _hta(tmp_c, ("hta", "nccl_parser_config"))
    for rank, d in digests.items():
        h = rounded["ranks"][str(rank)]
        ours = _ours(list(d.steps)[:-1])["compute_us"]
        assert h["compute_us"] <= ours + 2e-3 * h["kernels_by_type"]["COMPUTATION"]
        assert ours - h["compute_us"] <= 2.0 * h["kernels_by_type"]["COMPUTATION"]


# ---------------------------------------------------------------- msprof-analyze (Ascend)

@pytest.fixture(scope="module")
def msprof_level1(tmp_path_factory):
    src = fixture_path("ascend", "level1")
    _peer_python()
    tmp = tmp_path_factory.mktemp("msprof")
    shutil.copytree(src, tmp / "cluster")
    _run_peer("msprof_oracle.py", tmp / "cluster", tmp / "out", timeout=400)
    from canning_tb.analysis.build import build_digest
    from canning_tb.ingest.ascend.read import read_ascend
    digests = {}
    for rank_dir in sorted(src.iterdir()):
        if rank_dir.name.endswith("_ascend_pt"):
            d = build_digest(read_ascend(str(rank_dir)))
            digests[int(d.window.rank)] = d
    return json.loads((tmp / "out" / "oracle.json").read_text()), digests


US = 1000  # ns


def test_msprof_step_trace(msprof_level1):
    oracle, digests = msprof_level1
    rows = {int(r["index"]): r for r in oracle["step_trace"] if r["type"] == "rank"}
    assert sorted(rows) == sorted(digests) == [0, 1]
    errors = []
    for rank, d in digests.items():
        m = rows[rank]
        assert len(d.steps) == 1 and str(d.steps[0].number) == m["step"]
        b = d.steps[0].breakdown
        pairs = {"computing": (b.compute_ns + b.overlapped_ns, m["computing_us"]),
                 "communication_not_overlapped": (b.communication_ns, m["communication_not_overlapped_us"]),
                 "overlapped": (b.overlapped_ns, m["overlapped_us"]),
                 "communication": (d.communication.total_ns, m["communication_us"]),
                 # Free differs by the step span only (see module docstring)
                 "free - step span difference": (
                     (b.total_ns - b.compute_ns - b.overlapped_ns - b.communication_ns) - (b.total_ns - m["stage_us"] * US),
                     m["free_us"])}
        for k, (ours_ns, theirs_us) in pairs.items():
            if abs(ours_ns - theirs_us * US) > 1 * US:
                errors.append(f"rank {rank} {k}: ours {ours_ns / US:.3f} µs, msprof-analyze {theirs_us:.3f} µs")
    assert errors == []


def test_msprof_collectives(msprof_level1):
    oracle, digests = msprof_level1
    errors = []
    for rank, d in digests.items():
        ops = [o for o in oracle["ops"] if int(o["rank"]) == rank]
        assert ops, f"msprof-analyze lists no op for rank {rank}"
        calls = list(d.communication.calls)
        for o in ops:  # per op: elapse vs our call of the same start
            near = [c for c in calls if abs(c.start_ns - o["start_us"] * US) <= 1 * US]
            if len(near) != 1:
                errors.append(f"rank {rank} {o['op']}: {len(near)} calls of ours start at {o['start_us']} µs")
            elif abs(near[0].dur_ns - o["elapse_ms"] * 1e6) > 1 * US:
                errors.append(f"rank {rank} {o['op']}: elapse ours {near[0].dur_ns} ns, msprof {o['elapse_ms'] * 1e6:.0f} ns")
        by_group = defaultdict(lambda: defaultdict(float))
        for o in ops:
            g = by_group[o["op"].rsplit("@", 1)[-1]]
            g["n"] += 1
            for k in ("elapse_ms", "transit_ms", "wait_ms"):
                g[k] += o[k]
        ours = defaultdict(lambda: defaultdict(int))
        for c in d.communication.collectives:
            for f in ("total_ns", "transfer_ns", "wait_ns"):
                ours[c.group][f] += getattr(c, f)
        assert set(ours) == set(by_group)
        for grp, g in by_group.items():
            for mk, f in (("elapse_ms", "total_ns"), ("transit_ms", "transfer_ns"), ("wait_ms", "wait_ns")):
                if abs(ours[grp][f] - g[mk] * 1e6) > g["n"] * US:
                    errors.append(f"rank {rank} group {grp} {f}: ours {ours[grp][f]} ns, msprof {g[mk] * 1e6:.0f} ns")
    assert errors == []
