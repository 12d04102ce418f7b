"""side_tables.max_by on a Columns table is the plain loop over its rows (a second reading, in Python),
keys in the order they first appear, None values as -1, None keys kept."""
import random

from canning_tb.ingest import side_tables as side


def loop(rows):
    out = {}
    for r in rows:
        key = (r["device"], r["component"])
        out[key] = max(out.get(key, -1), -1 if r["reserved_bytes"] is None else r["reserved_bytes"])
    return out


def test_max_by_equals_the_loop_over_rows():
    rng = random.Random(3)
    for n in (0, 1, 7, 500):
        rows = [side.row("npu_module_mem", component=rng.choice(["APP", "HCCL", "GE", None]),
                         ts_ns=k, reserved_bytes=rng.choice([None, 0, 5, 2 ** 40, rng.randint(0, 99)]),
                         device=rng.choice(["npu:0", "npu:1", None])) for k in range(n)]
        cols = side.Columns.build("npu_module_mem", **{c: [r[c] for r in rows] for c in side.SIDE_TABLES["npu_module_mem"].column_names})
        got = side.max_by(cols, ("device", "component"), "reserved_bytes")
        assert list(got.items()) == list(loop(rows).items())
        assert side.max_by(rows, ("device", "component"), "reserved_bytes") == loop(rows)
