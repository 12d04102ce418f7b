"""rules/sequence.py at its edges (issue 46, mutation testing); the word scan against a character scan on random
sequences is test_digest_fast_paths.py's. Each expectation by hand: operator indices of each match."""
import numpy as np
import pytest

from canning_tb.analysis.rules.sequence import sequences


def test_no_thread_no_sequence():
    assert sequences(["a", "b"], []) == []


def test_a_pattern_that_is_not_words_is_refused_by_name():
    seq = sequences(["a", "b"], [np.array([0, 1])])[0]
    with pytest.raises(ValueError, match=r"not a pattern of words: 'a\.b'"):
        seq.spans("a.b")


def test_a_nameless_operator_breaks_a_match_and_matches_no_word():
    """[a, (no name), b]: "a b" does not match across the nameless one; "a" matches operator 0 alone."""
    seq = sequences(["a", "b"], [np.array([0, -1, 1])])[0]
    assert seq.spans("a b").tolist() == [] and seq.spans("a").tolist() == [[0, 1]]
    assert seq.spans("b").tolist() == [[2, 3]]


def test_past_the_basic_plane_of_words():
    """70,000 distinct one-word names (more than the 65,536 characters below the first code): each still its own
    character; the last two, in a row, match as operators 69,998 to 70,000."""
    names = [f"op{i}" for i in range(70_000)]
    seq = sequences(names, [np.arange(70_000)])[0]
    assert seq.words is not None and len(seq.words) == 70_000
    assert seq.spans("op69998 op69999").tolist() == [[69_998, 70_000]]
    assert seq.spans("op0 op1").tolist() == [[0, 2]]
