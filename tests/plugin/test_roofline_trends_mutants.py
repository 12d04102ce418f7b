"""queries/roofline.py, trends.py and bounds.py on digests made by hand (issue 46: fast tests for a mutation run):
the roofline's step starts and the chips offered per device kind; the trends' windows (ready ones only), their step,
what is refused, what is listed as a problem; the one bound on integers. Expected values worked out by hand."""
from types import SimpleNamespace

import pytest

from _hand_store import HandStore, Ready
from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.digest import analysis_revision
from canning_tb.queries import bounds, roofline, trends
from canning_tb.queries.errors import BadParameter, NotFound
from canning_tb.store.digest_part import RANKS

W = ("r", "w", "1")
CUDA = ['V100S PCIe', 'V100 PCIe', 'V100 SXM2', 'T4', 'A100 80GB SXM4', 'A100 80GB PCIe', 'A100 40GB', 'A10', 'L4',
        'L40S', 'H100 NVL', 'H100 PCIe', 'H100 SXM5', 'H200 SXM', 'B200']  # the table's CUDA rows, in its order
NPU = ['910A', '910B1', '910B2', '910B3', '910B4', '910_9391', '310P3']  # its NPU rows


def test_the_roofline_steps_and_chips(tmp_path):
    d = pb.Digest(analysis_revision=analysis_revision())
    d.window.start_ns = 1000
    d.steps.add(number=4, start_ns=1250, dur_ns=30).roofline.mfu = 0.5
    d.steps.add(number=5, start_ns=-1, dur_ns=7)
    d.roofline.mfu, d.roofline.device = 0.25, 1
    d.problems.add(file=str(tmp_path / "r" / "a.json"), message="m")
    for kind in ("NPU", "cuda", "npu"):
        d.roofline.peaks.add(kind=kind)
    body = roofline.roofline_impl(HandStore(tmp_path, {W: d}), *W)
    assert body["steps"] == [{"number": 4, "start_ns": 250, "dur_ns": 30, "roofline": {"flops": 0.0, "mfu": 0.5,
                                                                                        "hbm_gbps": 0.0}},
                             {"number": 5, "start_ns": -1, "dur_ns": 7, "roofline": {"flops": 0.0, "mfu": 0.0,
                                                                                      "hbm_gbps": 0.0}}]
    assert (body["roofline"]["mfu"], body["roofline"]["device"]) == (0.25, 1)
    assert body["chips"] == CUDA + NPU  # kinds folded and sorted: cuda, npu; each once
    assert (body["run"], body["worker"], body["window"]) == W
    assert body["problems"] == [{"file": "r/a.json", "message": "m", "severity": ""}]


def test_no_peak_no_chip():
    assert roofline.chip_choices(pb.Digest()) == []
    d = pb.Digest()
    d.roofline.peaks.add(kind="cpu")
    assert roofline.chip_choices(d) == []


class Windows(HandStore):
    """Run "r", workers w and v; w's windows 1 (ready), 2 (still being written), 3 (ready)."""

    def __init__(self, logdir, digests):
        super().__init__(logdir, digests)
        self.reads = []

    def runs(self):
        return ["r"]

    def workers(self, run):
        if run != "r":  # as Store's: an unknown run is a KeyError
            raise KeyError(run)
        return [SimpleNamespace(name="v"), SimpleNamespace(name="w")]

    def windows(self, run, worker):
        if run != "r" or worker not in ("v", "w"):
            raise KeyError(worker)
        return [SimpleNamespace(id=i, label=f"L{i}", status=s) for i, s in (("1", "ready"), ("2", "pending"),
                                                                             ("3", "ready"))]

    def digest_part(self, run, worker, window, fields):
        self.reads.append((window, fields))
        return self.digests[(run, worker, window)]


def trend_digest(step_ns: int, numbers: tuple, revision=None) -> pb.Digest:
    d = pb.Digest(analysis_revision=analysis_revision() if revision is None else revision)
    for n in numbers:
        d.steps.add(number=n, dur_ns=step_ns).breakdown.total_ns = step_ns
    d.average.total_ns = step_ns
    d.average_steps.extend(numbers)
    return d


def test_the_trends_of_a_workers_ready_windows(tmp_path):
    store = Windows(tmp_path, {("r", "w", "1"): trend_digest(2_000_000, (3, 0, 7, 5)),
                               ("r", "w", "3"): trend_digest(4_000_000, (0,), revision="old")})
    ready = Ready()
    body = trends.trends_impl(store, ready, "r", "w")
    assert ready.asked == [(("trends", "r", "w"), [("r", "w", "1"), ("r", "w", "3")])]
    assert store.reads == [("1", RANKS), ("3", RANKS)]
    assert (body["run"], body["worker"], body["loading"], body["problems"]) == ("r", "w", False, [])
    one, three = body["windows"]
    # window 1: its largest step number, 7; window 3: steps numbered 0 only, so its position (2, window 2 counted)
    assert (one["window"], one["label"], one["step"], one["old_analysis"]) == ("1", "L1", 7, False)
    assert (three["window"], three["label"], three["step"], three["old_analysis"]) == ("3", "L3", 2, True)
    assert one["values"]["step_time_ms"] == 2.0 and three["values"]["step_time_ms"] == 4.0


def test_the_trends_refuse_an_unknown_run_or_worker_and_list_an_unreadable_window(tmp_path):
    store = Windows(tmp_path, {("r", "w", "3"): trend_digest(1_000_000, (1,))})
    with pytest.raises(NotFound, match=r"^unknown run: 'q'$"):
        trends.trends_impl(store, Ready(), "q", "w")
    with pytest.raises(NotFound, match=r"^unknown worker: 'x' in run 'r'$"):
        trends.trends_impl(store, Ready(), "r", "x")
    body = trends.trends_impl(store, Ready(), "r", "w")
    assert body["problems"] == [{"window": "1", "message": "unknown run/worker/window: 'r' / 'w' / '1'"}]
    assert [p["window"] for p in body["windows"]] == ["3"]
    loading = trends.trends_impl(store, Ready({"done": 0, "total": 2}), "r", "v")
    assert loading == {"run": "r", "worker": "v", "loading": True, "done": 0, "total": 2}


def test_the_one_bound_on_integers():
    bound = 1 << 62
    assert bounds.check_int("x", bound) == bound and bounds.check_int("x", -bound) == -bound
    with pytest.raises(BadParameter, match=rf"^offset is out of range: '{bound + 1}'$"):
        bounds.check_int("offset", bound + 1)
    with pytest.raises(BadParameter, match=rf"^x is out of range: '-{bound + 1}'$"):
        bounds.check_int("x", -bound - 1)
    with pytest.raises(BadParameter, match=r"^x is out of range: '12abc'$"):
        bounds.check_int("x", bound + 1, text="12abc")
    with pytest.raises(BadParameter, match=r"^x is out of range: ''$"):
        bounds.check_int("x", bound + 1, text="")
    with pytest.raises(BadParameter, match=r"^x is out of range: 'a huge number'$"):
        bounds.check_int("x", 1 << 128)  # 129 bits
    big = (1 << 128) - 1  # 128 bits: written out, its first 80 digits (39 in all: all of them)
    with pytest.raises(BadParameter, match=rf"^x is out of range: '{big}'$"):
        bounds.check_int("x", big)
    with pytest.raises(BadParameter, match=r"^x is out of range: '9{80}'$"):
        bounds.check_int("x", bound + 1, text="9" * 100)  # the text cut to 80 characters
    with pytest.raises(BadParameter, match=r"^x is out of range: 'a huge number'$"):
        bounds.check_int("x", -(1 << 128))
