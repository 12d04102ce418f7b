"""ingest.forked: a forked child's value comes back whole through the pipe (numpy columns out of band,
everything else in the pickle), and a child that raises or dies gives None, never a part of a value."""
import os

import numpy as np
import pytest

from canning_tb.ingest import forked

pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="needs fork and a second CPU")


def _columns():
    rng = np.random.default_rng(7)
    return {
        "ts": rng.integers(0, 2 ** 62, 600_000),  # 4.8 MB: several times the pipe's 1 MB
        "name": rng.integers(-1, 90, 5_001).astype(np.int32),
        "kind": np.arange(7, dtype=np.uint8),  # an odd length: the next buffer starts unaligned in the stream
        "dur": rng.random(3_003),
        "empty": np.zeros(0, np.int64),
        "strided": np.arange(40, dtype=np.int64)[::3],  # not contiguous: pickled in band
        "fortran": np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4)),
        "text": ["a", "b" * 10_000, None],
    }


def _give(value):
    return value


def test_the_value_comes_back_equal_column_for_column():
    sent = _columns()
    got = forked.Forked(_give, sent).result()
    assert set(got) == set(sent)
    for key, col in sent.items():
        if isinstance(col, np.ndarray):
            assert got[key].dtype == col.dtype and got[key].shape == col.shape and np.array_equal(got[key], col)
            assert got[key].flags.aligned
        else:
            assert got[key] == col
    got["ts"][0] = -1  # the parent's own memory, not a read-only view
    assert got["ts"][0] == -1


def _raise():
    raise OSError("the child cannot read")


def _die():
    os._exit(3)


@pytest.mark.parametrize("target", [_raise, _die])
def test_a_child_that_fails_or_dies_gives_none_quietly(target, capfd):
    """None, and no traceback of the child's on stderr: the caller reads the part itself and reports
    what is wrong there, once."""
    assert forked.Forked(target).result() is None
    assert capfd.readouterr().err == ""


def _sleep():
    import time
    time.sleep(3600)  # far past the hang guard below: only a kill ends it in time
    return 1


def test_kill_stops_a_child_at_once():
    import time
    child = forked.Forked(_sleep)
    started = time.monotonic()
    child.kill()
    assert time.monotonic() - started < 120 and not child.proc.is_alive()  # a hang guard (the sleep is 1 h)
