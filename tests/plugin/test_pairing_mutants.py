"""queries/pairing.py on a store laid out by hand (issue 46: fast tests for a mutation run): each rule of the
default pairing of a window and of a run, which window each picks, the words it says, and what it refuses. Each
expected pairing is read off the layout in the test by the module doc's rules (the real-file cases are
tests/plugin/test_compare_pairing.py's)."""
from types import SimpleNamespace

import pytest

from canning_tb.queries.errors import NotFound
from canning_tb.queries.pairing import default_pairing, run_pairing, window_pairing


class Layout:
    """{run: {worker: (rank, [window ids])}}; a window id ending in "!" was triggered ("slow step"); labels "L<id>"."""

    def __init__(self, runs: dict):
        self.layout = runs

    def runs(self):
        return list(self.layout)

    def workers(self, run):
        return [SimpleNamespace(name=w, rank=rank) for w, (rank, _) in self.layout[run].items()]

    def windows(self, run, worker):
        ids = self.layout[run][worker][1]
        return [SimpleNamespace(id=i, label=f"L{i}", trigger="slow step" if i.endswith("!") else "") for i in ids]

    def position(self, run, worker, window):
        ids = self.layout[run][worker][1] if worker in self.layout.get(run, {}) else []
        if window not in ids:
            raise KeyError(window)
        return ids.index(window)

    def windows_at(self, run, position):
        return [(w, win) for w in self.workers(run) for win in self.windows(run, w.name)[position:position + 1]]


def test_a_triggered_window_against_the_last_normal_one_before_it():
    store = Layout({"r": {"w": (0, ["1", "2", "3!", "4!"])}})
    p = window_pairing(store, "r", "w", "4!")
    assert (p.base, p.target, p.rule) == ([("r", "w", "2")], [("r", "w", "4!")], "triggered")
    assert p.text == ("the job asked for r / w / L4! itself (slow step): compared with the last normal window "
                      "before it, r / w / L2")


def test_a_triggered_window_with_no_normal_one_before_it_takes_the_next_rule():
    store = Layout({"r": {"w": (0, ["1!", "2!", "3"])}})
    p = window_pairing(store, "r", "w", "2!")
    assert (p.base, p.target, p.rule) == ([("r", "w", "1!")], [("r", "w", "2!")], "previous window")
    assert p.text == "window against the window before it: r / w / L2! against r / w / L1!"
    p = window_pairing(store, "r", "w", "1!")
    assert (p.base, p.target, p.rule) == ([("r", "w", "2!")], [("r", "w", "1!")], "next window")
    assert p.text == "window against the window after it (none before it): r / w / L1! against r / w / L2!"


def test_the_runs_label_is_left_out_for_the_logdirs_own_run():
    p = window_pairing(Layout({".": {"w": (0, ["1", "2"])}}), ".", "w", "2")
    assert p.text == "window against the window before it: w / L2 against w / L1"


def test_a_one_window_run_against_the_matching_window_of_the_previous_run():
    store = Layout({"a": {"x": (1, ["1", "2", "3"]), "w": (0, ["4", "5"]), "none": (2, [])},
                    "empty": {"w": (0, [])},
                    "b": {"w": (0, ["6"]), "v": (1, ["7"]), "u": (5, ["8"]), "z": (-1, ["9"])}})
    # the same worker's window at the same position (0)
    p = window_pairing(store, "b", "w", "6")
    assert (p.base, p.target, p.rule) == ([("a", "w", "4")], [("b", "w", "6")], "previous run")
    assert p.text == "window against the matching window of the previous run: b / w / L6 against a / w / L4"
    # no worker v in a: the worker of the same rank (x, rank 1); "empty" holds no window and is skipped
    assert window_pairing(store, "b", "v", "7").base == [("a", "x", "1")]
    # rank 5 nowhere: the first worker holding windows (x)
    assert window_pairing(store, "b", "u", "8").base == [("a", "x", "1")]
    # rank -1 (unknown) matches no rank, not even a worker of rank -1: the first worker
    store.layout["a"]["y"] = (-1, ["10"])
    assert window_pairing(store, "b", "z", "9").base == [("a", "x", "1")]


def test_the_matching_window_past_the_other_runs_last_is_its_last():
    store = Layout({"a": {"w": (0, ["1"])}, "b": {"w": (0, ["2"]), "v": (0, ["3", "4", "5"])}})
    # b/v/5 is at position 2 and has windows before it: previous window; b/w/2 at 0, the only one of w
    assert window_pairing(store, "b", "v", "5").rule == "previous window"
    p = window_pairing(store, "b", "w", "2")
    assert (p.base, p.rule) == ([("a", "w", "1")], "previous run")
    store = Layout({"a": {"w": (0, ["1", "2"])}, "b": {"w": (0, ["3"])}})
    assert window_pairing(store, "b", "w", "3").base == [("a", "w", "1")]  # position 0 of a's two


def test_the_first_run_against_another_worker_then_the_next_run():
    store = Layout({"a": {"w": (0, ["1"]), "e": (1, []), "v": (1, ["2", "3"])}, "b": {"w": (0, ["4"])}})
    p = window_pairing(store, "a", "w", "1")
    assert (p.base, p.target, p.rule) == ([("a", "v", "2")], [("a", "w", "1")], "other worker")
    assert p.text == "window against the same position in another worker: a / w / L1 against a / v / L2"
    store = Layout({"a": {"w": (0, ["1"])}, "b": {"w": (0, ["4"]), "v": (0, ["5"])}})
    p = window_pairing(store, "a", "w", "1")
    assert (p.base, p.target, p.rule) == ([("b", "w", "4")], [("a", "w", "1")], "next run")
    assert p.text == ("window against the matching window of the next run (no window or run before it): "
                      "a / w / L1 against b / w / L4")


def test_the_only_window_and_an_unknown_one():
    store = Layout({"a": {"w": (0, ["1"])}, "z": {"w": (0, [])}})
    with pytest.raises(NotFound, match=r"^nothing to compare a / w / L1 with: it is the only window of the logdir; "
                                       r"name a baseline$"):
        window_pairing(store, "a", "w", "1")
    with pytest.raises(NotFound, match=r"^unknown run/worker/window: 'a' / 'w' / '2'$"):
        window_pairing(store, "a", "w", "2")


def test_a_run_against_the_previous_run():
    store = Layout({"a": {"w": (0, ["1", "2"]), "v": (1, ["3"])}, "e": {"w": (0, [])}, "b": {"w": (0, ["4", "5"])}})
    p = run_pairing(store, "b")
    assert (p.base, p.target, p.rule) == ([("a", "w", "1"), ("a", "w", "2"), ("a", "v", "3")],
                                          [("b", "w", "4"), ("b", "w", "5")], "previous run")
    assert p.text == ("run against the previous run of the logdir: 'b' against 'a', every window of every rank, "
                      "per step")
    with pytest.raises(NotFound, match=r"^nothing to compare run 'a' with: it is the first run of the logdir; "
                                       r"name a baseline$"):
        run_pairing(store, "a")
    with pytest.raises(NotFound, match=r"^run 'e' holds no window$"):
        run_pairing(store, "e")
    with pytest.raises(NotFound, match=r"^unknown run: 'q'$"):
        run_pairing(store, "q")
    with pytest.raises(NotFound, match=r"^run 'n' holds no window$"):
        run_pairing(Layout({"n": {}}), "n")


def test_a_run_whose_newest_position_was_triggered():
    # positions: 0 normal, 1 triggered on w, 2 normal, 3 (the newest) triggered on v only
    store = Layout({"r": {"w": (0, ["1", "2!", "3", "4"]), "v": (1, ["5", "6", "7", "8!"])}})
    p = run_pairing(store, "r")
    assert (p.base, p.target, p.rule) == ([("r", "w", "3"), ("r", "v", "7")], [("r", "w", "4"), ("r", "v", "8!")],
                                          "triggered")
    assert p.text == ("the job asked for its newest window itself (slow step): compared with the last normal window "
                      "before it (L3), on every rank")
    # the newest position only on the deeper worker: the workers holding a window there
    store = Layout({"r": {"w": (0, ["1", "2!"]), "v": (1, ["3", "4", "5!"])}})
    p = run_pairing(store, "r")
    assert (p.base, p.target) == ([("r", "w", "1"), ("r", "v", "3")], [("r", "v", "5!")])


def test_a_triggered_run_with_no_normal_position_falls_back_to_the_previous_run():
    store = Layout({"a": {"w": (0, ["0"])}, "r": {"w": (0, ["1!", "2!"])}})
    p = run_pairing(store, "r")
    assert (p.base, p.rule) == ([("a", "w", "0")], "previous run")
    store = Layout({"r": {"w": (0, ["1!"])}})
    with pytest.raises(NotFound, match="first run of the logdir"):
        run_pairing(store, "r")


def test_the_default_pairing_is_the_windows_when_both_are_named():
    store = Layout({"a": {"w": (0, ["1"])}, "b": {"w": (0, ["2", "3"])}})
    assert default_pairing(store, "b", "w", "3").rule == "previous window"
    assert default_pairing(store, "b").rule == "previous run"
    assert default_pairing(store, "b", "w").rule == "previous run"
    assert default_pairing(store, "b", None, "3").rule == "previous run"


def test_the_first_of_two_windows_against_the_second():
    p = window_pairing(Layout({"r": {"w": (0, ["1", "2"])}}), "r", "w", "1")
    assert (p.base, p.target, p.rule) == ([("r", "w", "2")], [("r", "w", "1")], "next window")


def test_the_worker_of_the_same_name_before_the_same_rank_and_rank_0_matched():
    store = Layout({"a": {"x": (0, ["1"]), "w": (1, ["2"])}, "b": {"w": (0, ["3"])}})
    assert window_pairing(store, "b", "w", "3").base == [("a", "w", "2")]  # w, not x of rank 0
    store = Layout({"a": {"x": (1, ["1"]), "y": (0, ["2"])}, "b": {"v": (0, ["3"])}})
    assert window_pairing(store, "b", "v", "3").base == [("a", "y", "2")]  # rank 0 is a rank
