"""GET /roofline, the work columns of /operators and their CSV, and canning-prof's MFU line and JSON, on
the DLRM V100 fixture: MFU and FLOPs per step against a plain reading of the trace (json: the outermost
matrix operators' FLOPs from their Input Dims, the step's span by the rule of analysis/steps.py, the V100
SXM2's FP32 peak from NVIDIA's datasheet), not against the digest the route serialises."""
import gzip
import json
import math
import shutil
from decimal import Decimal

import pytest

from conftest import fixture_path
from test_analysis_fixtures import hand_steps

from canning_tb.cli.main import main as cli_main
from canning_tb.queries import sections
from canning_tb.queries.roofline import roofline_impl
from canning_tb.store import Store

TRACE = "worker0_step_12.1694128201545.pt.trace.json.gz"
V100_SXM2_FP32 = 15.7e12  # FLOP/s, NVIDIA V100 datasheet (SXM2); every matrix call of the trace is float
MATRIX = ("aten::mm", "aten::addmm", "aten::bmm", "aten::linear")  # the trace's matrix operators


def _ns(us) -> int:
    return int(Decimal(str(us)) * 1000)


def _flops(e) -> int:
    """2 x batch x M x N x K from the call's Input Dims (torch's argument order)."""
    d = e["args"]["Input Dims"]
    if e["name"] == "aten::mm":  # A[M, K] @ B[K, N]
        return 2 * d[0][0] * d[1][1] * d[0][1]
    if e["name"] == "aten::addmm":  # self, A[M, K], B[K, N]
        return 2 * d[1][0] * d[2][1] * d[1][1]
    if e["name"] == "aten::bmm":  # A[b, M, K] @ B[b, K, N]
        return 2 * d[0][0] * d[0][1] * d[1][2] * d[0][2]
    x, w = d[0], d[1]  # linear: x[..., K] @ W[N, K]^T
    return 2 * math.prod(x[:-1]) * w[0] * w[1]


def hand_mfu(path):
    """(FLOPs of the one step, MFU): the matrix calls not inside another one (an addmm inside its linear
    counts once), at the FP32 peak, over the step's span."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    ops = [e for e in events if e.get("cat") == "cpu_op" and e["name"] in MATRIX]

    def inside(a, b):
        return a is not b and a["tid"] == b["tid"] and _ns(b["ts"]) <= _ns(a["ts"]) and \
            _ns(a["ts"]) + _ns(a["dur"]) <= _ns(b["ts"]) + _ns(b["dur"])

    top = [e for e in ops if not any(inside(e, o) for o in ops)]
    assert len(ops) == 30 and len(top) == 23  # 3 linears hold their addmm; the backward's mm stand alone
    ((_, _, dur),) = hand_steps(events)  # one step: ProfilerStep#10
    flops = sum(_flops(e) for e in top)
    return flops, flops / V100_SXM2_FP32 / (dur / 1e9)


def test_route_columns_and_cli(capsys, tmp_path):
    folder = tmp_path / "dlrm"  # rank 0 alone: one window to digest
    folder.mkdir()
    shutil.copy(fixture_path("param", "dlrm_8ranks", TRACE), folder / TRACE)
    store = Store(str(folder))
    (run,) = store.runs()
    worker = next(w.name for w in store.workers(run) if w.name.startswith("worker0"))
    (window,) = store.windows(run, worker)
    digest = store.digest(run, worker, window.id)
    body = roofline_impl(store, run, worker, window.id)
    flops, mfu = hand_mfu(folder / TRACE)  # 60487168 FLOPs in 14455 us: 0.0267 %
    assert body["roofline"]["flops_per_step"] == flops
    assert body["roofline"]["mfu"] == pytest.approx(mfu, rel=1e-12)
    peak = next(p for p in body["roofline"]["peaks"] if p["device"] == body["roofline"]["device"])
    assert (peak["matched"], peak["tflops"]["fp32"]) == ("NVIDIA V100 SXM2", 15.7)
    assert [s["start_ns"] for s in body["steps"]] == [s.start_ns - digest.window.start_ns for s in digest.steps]
    # the operators sorted by a work column, as the Operators view asks them
    page = sections.operators_impl(store, run, worker, window.id, "shape", {"sort": "work.tflops", "order": "desc"})
    tflops = [r["work"]["tflops"] for r in page["rows"]]
    assert tflops == sorted(tflops, reverse=True) and tflops[0] > 0
    name, header, rows = sections.operators_csv(store, run, worker, window.id, "shape", {"sort": "work.tflops"})
    first = dict(zip(header, next(iter(rows))))
    assert "work.roof_share" in header and first["work.tflops"] == tflops[0]
    # canning-prof: the JSON's roofline and the text's MFU line
    trace = folder / TRACE
    assert cli_main(["--mode=view", f"--input={trace}", "--format=json", f"--cache-dir={tmp_path}"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)["windows"]
    assert entry["roofline"]["mfu"] == pytest.approx(mfu, rel=1e-12) and entry["roofline"]["flops_per_step"] == flops
    assert entry["roofline"]["device"]["matched"] == "NVIDIA V100 SXM2"
    assert cli_main(["--mode=view", f"--input={trace}", f"--cache-dir={tmp_path}"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("MFU "))
    assert line.startswith(f"MFU {100 * mfu:.1f} % of Tesla V100-SXM2-32GB (NVIDIA V100 SXM2, from the files)")
