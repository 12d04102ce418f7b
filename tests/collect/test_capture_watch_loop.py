"""The capture watcher's loop (capture/watch.py `Watcher._run`) on a clock the test turns: when a status is due (at
start, each heartbeat, the early one once the first step rate can be measured), how long each turn waits, and the
last status when the watch stops. The clock and the wake-up event are stood in for (the loop reads time.monotonic and
waits on its event; a real clock would make the test race it); the status writer is recorded, not run (its figures
are checked in test_capture_watch_steps.py)."""
from types import SimpleNamespace as NS

from canning_tb.capture import watch


class _Clock:
    def __init__(self, t):
        self.t = t

    def monotonic(self):
        return self.t


class _Wake:
    """Each wait moves the clock by the time waited (a wake-up comes only when the time is up) and is recorded;
    after `turns` waits the watch is asked to stop."""

    def __init__(self, clock, watcher, turns):
        self.clock, self.watcher, self.turns, self.waits = clock, watcher, turns, []

    def wait(self, seconds):
        self.waits.append(seconds)
        self.clock.t += seconds
        if len(self.waits) == self.turns:
            self.watcher._stop.set()

    def clear(self):
        pass


def _watcher(tmp_path, monkeypatch, turns, heartbeat_s=10.0, poll_s=4.0, start=100.0, step=0):
    clock = _Clock(start)
    monkeypatch.setattr(watch, "time", NS(monotonic=clock.monotonic, time_ns=lambda: 0))
    w = watch.Watcher(str(tmp_path), NS(heartbeat_s=heartbeat_s, poll_s=poll_s), "cpu")
    w.step = step
    beats = []

    def beat(now, watching=True):
        beats.append((now, watching))
        w._dirty = False
    w._beat, w._poll = beat, lambda: None
    w._wake = _Wake(clock, w, turns)
    return w, beats


def test_a_status_at_start_then_each_heartbeat(tmp_path, monkeypatch):
    """Heartbeat 10 s, poll 4 s, from t = 100: a status at 100 (the first is due: dirty), the next due at 110. Waits:
    min(4, 110 - 100) = 4 -> 104, min(4, 6) = 4 -> 108, min(4, 2) = 2 -> 110: due (110 >= 110), a status, the next
    at 120: 4 -> 114; asked to stop after these 4 waits: the last status at 114, not watching."""
    w, beats = _watcher(tmp_path, monkeypatch, turns=4)
    w._run()
    assert w._wake.waits == [4.0, 4.0, 2.0, 4.0]
    assert beats == [(100.0, True), (110.0, True), (114.0, False)]


def test_a_status_is_written_when_something_changed(tmp_path, monkeypatch):
    """A change (dirty) during the first wait: a status at the next turn (104), and the heartbeat counts from it,
    the next due at 114: waits 4 (-> 104), min(4, 114 - 104) = 4 (-> 108), min(4, 6) = 4 (-> 112), min(4, 2) = 2
    (-> 114), then the stop's status at 114."""
    w, beats = _watcher(tmp_path, monkeypatch, turns=4)
    real_wait = w._wake.wait

    def wait(seconds):
        real_wait(seconds)
        if len(w._wake.waits) == 1:
            w._dirty = True
    w._wake.wait = wait
    w._run()
    assert w._wake.waits == [4.0, 4.0, 4.0, 2.0]
    assert beats == [(100.0, True), (104.0, True), (114.0, False)]


def test_the_first_rate_is_said_as_soon_as_it_can_be_measured(tmp_path, monkeypatch):
    """Steps run (5 since the sample at 100) but no rate yet: a status as soon as a second has passed since the
    sample, not at the heartbeat. Poll 0.5 s: at 100 the first status; 100.5 (0.5 s: too soon), 101 (1.0 s: due);
    the heartbeat of 10 s would wait until 110."""
    w, beats = _watcher(tmp_path, monkeypatch, turns=3, poll_s=0.5, step=5)
    w._run()
    assert w._wake.waits == [0.5, 0.5, 0.5]
    assert beats == [(100.0, True), (101.0, True), (101.5, False)]


def test_no_early_status_without_steps_or_with_a_rate(tmp_path, monkeypatch):
    """No step since the sample (step 0), or a rate already known: only the heartbeat's statuses (100, then the
    stop's at 101.5)."""
    for step, rate in ((0, None), (5, 2.0)):
        w, beats = _watcher(tmp_path, monkeypatch, turns=3, poll_s=0.5, step=step)
        w._rate = rate
        w._run()
        assert beats == [(100.0, True), (101.5, False)], (step, rate)


def test_a_turn_never_waits_less_than_nothing_and_reads_what_was_handed_over(tmp_path, monkeypatch):
    """A heartbeat of 0 s: a status every turn and waits of 0 (not negative); a trigger handed over (asked) is written
    and the run's bytes measured at the next turn, once each."""
    w, beats = _watcher(tmp_path, monkeypatch, turns=3, heartbeat_s=0.0)
    done = []
    w._write_asked = lambda: done.append("asked") or setattr(w, "asked", None)
    w._measure_bytes = lambda: done.append("measured")
    w.asked, w._measure = ("trigger",), True
    w._run()
    assert w._wake.waits == [0.0, 0.0, 0.0]
    assert beats == [(100.0, True), (100.0, True), (100.0, True), (100.0, False)]
    assert done == ["asked", "measured"]
