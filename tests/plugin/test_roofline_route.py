"""GET /roofline, the work columns of /operators and their CSV, and canning-prof's MFU line and JSON:
the same numbers as the digest's roofline section (one definition), on the DLRM V100 fixture."""
import json
import shutil

from conftest import fixture_path

from canning_tb.analysis.efficiency.summary import roofline_figures
from canning_tb.cli.main import main as cli_main
from canning_tb.util.digest_json import to_plain
from canning_tb.queries import sections
from canning_tb.queries.roofline import roofline_impl
from canning_tb.store import Store

TRACE = "worker0_step_12.1694128201545.pt.trace.json.gz"


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
    assert body["roofline"] == to_plain(digest.roofline) and body["roofline"]["mfu"] > 0
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
    assert entry["roofline"] == roofline_figures(digest) and entry["roofline"]["device"]["matched"] == "NVIDIA V100 SXM2"
    assert cli_main(["--mode=view", f"--input={trace}", f"--cache-dir={tmp_path}"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("MFU "))
    assert line.startswith(f"MFU {100 * digest.roofline.mfu:.1f} % of Tesla V100-SXM2-32GB (NVIDIA V100 SXM2)")
