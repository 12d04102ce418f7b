"""Profile.op_summary() and friends on a real torch.profiler CPU run (no fakes).

The run: a small model fed by a deliberately slow DataLoader, one gloo all_reduce per step in a
real (single-process) process group, a 4 MiB tensor held during each step. Expected values come
from torch itself (its raw profiler events and key_averages()) and from the workload's
construction (3 all_reduces of 16 bytes, a DataLoader that sleeps), never from canning_tb.
"""
import time
from collections import defaultdict
from decimal import Decimal

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

from _raw_kineto import Ev, fold_targets, nest_by_stack  # noqa: E402
from canning import profiling_suite as ps  # noqa: E402

ACTIVE = 3           # recorded steps (schedule: 1 warm-up step, then 3 active)
BIG = 1024 * 1024    # float32 elements held during each step: 4 MiB
REDUCED = 4          # float32 elements all-reduced per step: 16 bytes


class SlowData(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(0.004)  # 8 items per batch: ~32 ms of data loading per step, far above the compute
        return torch.randn(16)


def train(handler=None):
    kw = {"on_trace_ready": handler} if handler else {}
    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    try:
        model = torch.nn.Linear(16, 8)
        sched = ps.schedule(wait=0, warmup=1, active=ACTIVE, repeat=1)
        with ps.Profile(activities=[ps.ProfilerActivity.CPU], schedule=sched, profile_memory=True,
                        record_shapes=True, **kw) as prof:
            for i, x in enumerate(DataLoader(SlowData(), batch_size=8)):
                if i == 1 + ACTIVE:
                    break
                big = torch.zeros(BIG)
                (model(x) ** 2).mean().backward()
                dist.all_reduce(torch.ones(REDUCED))
                del big
                prof.step()
    finally:
        dist.destroy_process_group()
    return prof


@pytest.fixture(scope="module")
def prof():
    return train()


def raw_ops(prof):
    """{name: [calls, total ns, min ns, max ns]} of the CPU operators in torch's own raw event list,
    annotations, python functions and ProfilerStep excluded; a call that is the only child of a call
    of the same name counts in that call (nested by hand per thread: tests/_raw_kineto.py), as in
    key_averages()."""
    raw = []
    for i, e in enumerate(prof.profiler.profiler.kineto_results.events()):
        if e.device_type() != torch.autograd.DeviceType.CPU or e.is_python_function() or e.name().startswith("["):
            continue
        cat = "user_annotation" if e.is_user_annotation() else "cpu_op"
        raw.append(Ev({"name": e.name(), "cat": cat, "pid": 0, "tid": e.start_thread_id(),
                       "ts": Decimal(e.start_ns()) / 1000, "dur": Decimal(e.duration_ns()) / 1000}, i))
    nest_by_stack(raw)
    target = fold_targets(raw)
    out = {}
    for e in raw:
        if e.cat != "cpu_op" or e.name.startswith("ProfilerStep#") or target[e] is not e:
            continue
        d = e.dur
        r = out.setdefault(e.name, [0, 0, d, d])
        r[0] += 1
        r[1] += d
        r[2], r[3] = min(r[2], d), max(r[3], d)
    return out


def test_op_summary_against_torch_raw_events(prof):
    table = prof.op_summary()
    truth = raw_ops(prof)
    rows = {r[0]: r for r in table.rows}
    assert set(rows) == set(truth)
    for name, (calls, total, lo, hi) in truth.items():
        _, got_calls, got_total, _, got_min, got_max, *_work = rows[name]  # then GFLOP, TFLOP/s, Roof(%)
        assert got_calls == calls, name
        assert got_total == round(total / 1e6, 3), name  # ms with 3 decimals, from exact ns
        assert (got_min, got_max) == (round(lo / 1e6, 3), round(hi / 1e6, 3)), name
    totals = [r[2] for r in table.rows]
    assert totals == sorted(totals, reverse=True)
    assert "aten::linear" in rows and rows["aten::linear"][1] == ACTIVE


def test_op_summary_against_key_averages(prof):
    """key_averages() folds an op's single same-name child into it (torch's dedup of nested records
    such as aten::sum -> aten::sum), and so does op_summary(): the same calls, the same totals to the
    table's 1 µs rounding."""
    ka = {e.key: e for e in prof.key_averages()}
    for name, calls, total_ms, *_ in prof.op_summary().rows:
        assert name in ka, name
        assert ka[name].count == calls, name
        assert abs(ka[name].cpu_time_total / 1000 - total_ms) <= 0.0005 + 1e-9, name


def _mb(cell: str) -> float:
    assert cell.endswith(" MB"), cell
    return float(cell[:-3])


def test_memory_summary_sees_the_big_tensor(prof):
    (row,) = [r for r in prof.memory_summary().rows if r[0] == "CPU"]
    _, allocations, frees, allocated, peak, _, _ = row
    assert allocations >= ACTIVE and frees >= ACTIVE  # at least the big tensor of each step, freed
    mib = BIG * 4 / 1024 ** 2
    assert _mb(allocated) >= ACTIVE * mib
    assert mib <= _mb(peak) < mib + 1  # one big tensor alive at a time, the rest is tiny


def test_communication_summary_counts_the_all_reduces(prof):
    table = prof.communication_summary()
    (row,) = [dict(zip(table.columns, r)) for r in table.rows if r[0] == "AllReduce"]
    calls, total_ms, nbytes = row["Calls"], row["Total(ms)"], row["Bytes"]
    assert calls == ACTIVE
    assert nbytes == ACTIVE * REDUCED * 4
    assert total_ms > 0


def test_suggestions_name_the_slow_dataloader(prof):
    table = prof.optimization_suggestions()
    hits = [r for r in table.rows if r[1].startswith("Data loading takes a large share of the step")]
    assert len(hits) == 1 and hits[0][0] == "warning"
    assert str(table)  # printable


def test_summaries_after_the_trace_handler(tmp_path):
    """torch saves a trace once: the summaries read the one the handler published."""
    prof = train(ps.tensorboard_trace_handler(str(tmp_path)))
    assert prof.op_summary().rows
