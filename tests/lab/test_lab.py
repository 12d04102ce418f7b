"""The findings lab (issue 39): each finding proved by experiment, not by expectation.

Each pair is a real CPU job with a known problem (tests/_lab_job.py), run as is ("before") and with the change
the finding proposes ("after"), once each (TEST_ORDER); 2-rank pairs are real gloo jobs. The finding must
appear on "before", be absent (or under its own floor) on "after", and its predicted gain per step (the
RuleHit's gain_ns, as `canning-prof --mode=view --format=json` reports it) must be within a factor of FACTOR of
the gain the jobs measured with their own timer (tests/_lab.py), when the rest of the machine kept under
BUSY_CORES busy meanwhile (else skipped, saying so). A reading outside FACTOR is measured once more the other way
round (RETEST_ORDER) and judged on the four jobs: one job slowed by the machine is a reading of the machine. The
suite may run on shared cores, where one job's extra load moves a true finding's ratio; the ±BAND band is measured
by benchmarks/lab.py (jobs interleaved, a quiet machine) and stated in README.md and docs/lab.md. Where today's
engine does not state the finding, the check is marked xfail (not strict) with the reason; no pair gets a band of
its own.
"""
import pytest
from _lab import BUSY_CORES, FACTOR, PAIRS, RETEST_ORDER, TEST_ORDER, below_floor, hits, pooled, run_pair, table

pytestmark = [pytest.mark.slow, pytest.mark.timed, pytest.mark.timeout(900)]

# (pair, check) -> why today's engine fails it; the lead removes an entry once the engine passes it
XFAIL = {
    ("ddp_buckets", "after"): "the default buckets still leave the last bucket's all-reduce unhidden, above 10 % (a "
                              "true finding: smaller buckets would hide more)",
}


def _expect(request, pair: str, check: str) -> None:
    reason = XFAIL.get((pair, check))
    if reason:
        request.applymarker(pytest.mark.xfail(strict=False, reason=reason))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """run_pair(name), once per pair for the module (2 jobs: before, after)."""
    done = {}

    def get(name):
        if name not in done:
            done[name] = run_pair(name, tmp_path_factory.mktemp(name), order=TEST_ORDER)
        return done[name]

    def again(name):
        """The pair measured once more, RETEST_ORDER, pooled with its first run."""
        done[name] = pooled(get(name), run_pair(name, tmp_path_factory.mktemp(name + "-again"), order=RETEST_ORDER))
        return done[name]
    get.again = again
    yield get
    print("\n" + table([r.row() for r in done.values()]))  # the figures, shown with pytest -s


@pytest.mark.parametrize("pair", list(PAIRS))
def test_the_finding_appears_before(lab, request, pair):
    _expect(request, pair, "before")
    result = lab(pair)
    for job in result.of("before"):
        assert hits(result.pair, job["report"]), (f"{pair}: no {result.pair.rules} on the run with the problem; "
                                                  f"{result.row()}")


@pytest.mark.parametrize("pair", list(PAIRS))
def test_the_finding_is_gone_after(lab, request, pair):
    _expect(request, pair, "after")
    result = lab(pair)
    for job in result.of("after"):
        left = [h for h in hits(result.pair, job["report"]) if not below_floor(h)]
        assert not left, (f"{pair}: still {[(h['rule'], h['gain_ns'] / 1e6) for h in left]} after the change; "
                          f"{result.row()}")


@pytest.mark.parametrize("pair", list(PAIRS))
def test_the_predicted_gain_is_the_measured_one(lab, request, pair):
    _expect(request, pair, "band")
    result = lab(pair)
    row = result.row()
    if result.pair.gain == "none":  # a one-off: the finding claims no gain per step
        assert row["found_before"] and all(row["found_before"]) and row["within"], row
        return
    assert row["predicted_ms"] == row["predicted_ms"], f"{pair}: the finding has no gain; {row}"
    if not _within(row):
        result = lab.again(pair)
        row = result.row()
    if (result.others_cores or 0) > BUSY_CORES:
        pytest.skip(f"{pair}: the rest of the machine kept {result.others_cores:.1f} cores busy while the jobs ran "
                    f"(over {BUSY_CORES}): the gains are not judged on a shared machine; {row}")
    assert _within(row), (f"{pair}: predicted {row['predicted_ms']:.2f} ms/step, measured {row['measured_ms']:.2f} "
                          f"ms/step over {len(result.jobs)} jobs (within a factor {FACTOR:g}); {row}")


def _within(row: dict) -> bool:
    pred, meas = row["predicted_ms"], row["measured_ms"]
    return meas > 0 and meas / FACTOR <= pred <= FACTOR * meas


def _find(obj, key_part: str) -> list:
    """Every value under a key containing key_part, anywhere in the report."""
    found = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if key_part in k and v:
                found.append(v)
            found += _find(v, key_part)
    elif isinstance(obj, list):
        for v in obj:
            found += _find(v, key_part)
    return found


def _rank_time(obj, out: dict) -> dict:
    """{rank: summed duration} of the dicts that name a rank and a duration, anywhere under obj."""
    if isinstance(obj, dict):
        dur = next((obj[k] for k in ("dur_ns", "ns", "time_ns") if isinstance(obj.get(k), (int, float))), None)
        if isinstance(obj.get("rank"), int):
            out[obj["rank"]] = out.get(obj["rank"], 0) + (dur if dur and dur > 0 else 0)
        for v in obj.values():
            _rank_time(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _rank_time(v, out)
    return out


def test_the_critical_path_goes_through_the_slowed_rank(lab):
    """Rank 1 works 30 ms more per step: the step's critical path runs on rank 1 (rank 0 waits for it inside
    the all-reduce). Read from the report, whatever the field's shape: the entries that name a rank."""
    result = lab("slow_rank")
    for job in result.of("before"):
        paths = _find(job["report"], "critical_path")
        assert paths, "no critical path in canning-prof's report"
        per_rank = _rank_time(paths, {})
        assert 1 in per_rank, f"the critical path names no event of rank 1: {per_rank}"
        assert per_rank[1] >= per_rank.get(0, 0), f"the critical path holds more of rank 0 than of rank 1: {per_rank}"


def test_the_pipeline_path_runs_through_the_slow_stage(lab):
    """Stage 0 (rank 0) holds 3x the layers of stage 1: rank 1 waits in its receives for it, so the critical path
    across ranks (which follows a receive that waited back to its sender) holds more of rank 0 than of rank 1;
    after the even split no stage_imbalance above its floor is left, whichever stage it would name."""
    result = lab("pipeline")
    for job in result.of("before"):
        paths = [e["analysis"]["critical_path"] for e in job["report"]["ranks"] if e.get("analysis")]
        assert paths and any(paths), "no critical path across ranks in the report"
        per_rank = _rank_time(paths, {})
        assert per_rank.get(0, 0) > per_rank.get(1, 0), f"the path holds more of rank 1 than of rank 0: {per_rank}"
    for job in result.of("after"):
        left = [h for e in job["report"]["ranks"] for h in e.get("findings", [])
                if h["rule"] == "stage_imbalance" and not below_floor(h)]
        assert not left, [(h["seen"], h["gain_ns"]) for h in left]
