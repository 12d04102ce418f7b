"""A short fuzz run of every compiled entry point (ingest/native/fuzz: the Ascend and Kineto scanners, the
frames' sweep, the tree's nesting and sums): each target a bounded NUMBER of inputs (libFuzzer's -runs), in
its own interpreter, against its module built by clang with AddressSanitizer, UndefinedBehaviorSanitizer and
libFuzzer's coverage counters. A sanitizer report, a failed check of an answer or an exception fails it,
with the crashing input's path and the log. `make fuzz` is the long run (FUZZ_SECONDS a target)."""
import pytest

from conftest import fixture_path

# the targets are scripts of the source tree, not of the wheel: an installed package (make test-nocc) has none
build = pytest.importorskip("canning_tb.ingest.native.fuzz.build", reason="the fuzz targets run from the source tree")
run = pytest.importorskip("canning_tb.ingest.native.fuzz.run", reason="the fuzz targets run from the source tree")

pytestmark = pytest.mark.compiled("_ascend_scan", "_kineto_scan", "_kineto_sweep", "_tree")

RUNS = 5000  # inputs per target: seconds on 2 cores, most of it the interpreter's start and the seeds


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    try:
        build.runtime()
        return build.compile_all(tmp_path_factory.mktemp("fuzz-build"))
    except build.Unavailable as e:
        pytest.skip(f"no fuzzing here: {e}")


@pytest.mark.parametrize("target", run.TARGETS)
def test_a_short_fuzz_run_finds_nothing(target, built, tmp_path):
    fixtures = fixture_path("ascend").parent
    got = run.fuzz_one(target, built, tmp_path, fixtures, runs=RUNS, per_file=3, max_files=4)
    log = got.log.read_text(errors="replace")
    assert got.ok, f"{got.line()}\n{log[-6000:]}"
    assert got.runs >= RUNS, log[-3000:]  # every input ran: the run was not cut short
