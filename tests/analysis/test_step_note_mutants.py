"""Where the steps come from and why a step is left out of the average (analysis/step_note.py), on steps made
by hand (issue 46: the mutants these tests kill). Times in ns; the ms figures worked out in the comments."""
import pytest

from canning_tb.analysis import digest_pb2 as pb
from canning_tb.analysis.step_note import from_events, left_out_reason, queued, step_line, step_note


@pytest.mark.parametrize("source", ["", "trace", "step_marks", "window"])
def test_steps_cut_from_the_events(source):
    assert from_events(source)
    assert step_note(pb.Digest(step_source=source)) == "" or source in ("step_marks", "window")


@pytest.mark.parametrize("source", ["step_trace_time.csv", "analysis.db", "TRACE"])
def test_steps_of_cann(source):
    """CANN's files are no source of the window's own events; the note names the file."""
    assert not from_events(source)
    note = step_note(pb.Digest(step_source=source))
    assert f"({source})" in note and "CANN" in note and "no ProfilerStep ranges" in note


def test_notes_of_step_marks_and_of_the_whole_window():
    marks = step_note(pb.Digest(step_source="step_marks"))
    assert "prof.step()" in marks and "ProfilerStep" in marks
    window = step_note(pb.Digest(step_source="window"))
    assert "ONE step" in window and window != marks
    assert step_note(pb.Digest(step_source="trace")) == step_note(pb.Digest()) == ""


def test_queued_over_five_percent_of_the_step():
    """5 % of 1 000 000 ns is 50 000: a wait of 50 000 is not over it, 50 001 is; a step of 0 ns waiting 1 is."""
    assert not queued(pb.Step(dur_ns=1_000_000, untraced_wait_ns=50_000))
    assert queued(pb.Step(dur_ns=1_000_000, untraced_wait_ns=50_001))
    assert not queued(pb.Step(dur_ns=1_000_000, untraced_wait_ns=0))
    assert queued(pb.Step(dur_ns=0, untraced_wait_ns=1))


def test_left_out_reason():
    assert left_out_reason(pb.Step(dur_ns=100, untraced_wait_ns=50)) == ""  # queued, but not distorted: kept
    assert left_out_reason(pb.Step(dur_ns=100, untraced_wait_ns=50, distorted=True)) == "queued work"
    assert left_out_reason(pb.Step(dur_ns=100, untraced_wait_ns=5, distorted=True)) == "window end"  # 5 = 5 %


def test_step_line_of_a_queued_step():
    """A wait of 1 234 567 ns = 1.234567 ms, rounded to 1.235; step 3."""
    s = pb.Step(number=3, dur_ns=10_000_000, untraced_wait_ns=1_234_567, distorted=True, tail_ns=9_000_000)
    kept = step_line(s, True)
    assert kept.startswith("Step 3 includes 1.235 ms ") and "no other step to average instead" in kept
    left = step_line(s, False)
    assert left.startswith("Step 3 is left out of the average: its host waited 1.235 ms ")
    assert "queued before the window" in left and "tail" not in left and "9.0" not in left
    assert kept.endswith("window; no other step to average instead.")


def test_step_line_milliseconds_of_long_waits():
    """5 000 000 400 ns = 5000.0004 ms, rounded to 3 places: 5000.0 (not 4999.995, as over 1 000 001 ns per ms);
    a tail of 2 000 000 400 ns: 2000.0 (2000.0004 to 4 places)."""
    s = pb.Step(number=1, dur_ns=20_000_000_000, untraced_wait_ns=5_000_000_400, distorted=True)
    assert step_line(s, True).startswith("Step 1 includes 5000.0 ms ")
    s = pb.Step(number=1, dur_ns=20_000_000_000, tail_ns=2_000_000_400, distorted=True)
    assert "its device work ran 2000.0 ms past" in step_line(s, False)


def test_step_line_of_a_step_into_the_window_end():
    """Not queued (0 wait), distorted: the tail of 2 500 000 ns = 2.5 ms; a step neither queued nor distorted: ''."""
    s = pb.Step(number=7, dur_ns=10_000_000, tail_ns=2_500_000, distorted=True)
    line = step_line(s, False)
    assert line.startswith("Step 7 is left out of the average: its device work ran 2.5 ms past its host range")
    assert step_line(s, True) == line  # kept or not: the same sentence
    assert step_line(pb.Step(number=7, dur_ns=10_000_000, tail_ns=2_500_000), False) == ""
