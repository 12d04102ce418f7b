"""The NPU's efficiency figures (analysis/npu_metrics.py) on tables written here by hand (issue 46, docs/mutants.md
"What was run on npu_metrics.py": before it only whole Ascend fixtures reached the module, and a mutation run showed
which of its branches no test read). Each expected value is worked out in the docstring or a comment from the rows
in the test (times in ns).
"""
import math

import numpy as np
from _synthetic import ev, table

from canning_tb.analysis import npu_metrics as nm
from canning_tb.ingest.table import Kind as K

NPU0 = [{"kind": "npu", "index": 0, "name": "Ascend910B"}]


def _kernel(ts, dur, core, device=0, name="k"):
    return ev(name, K.KERNEL, ts, dur, core=core, device=device)


def _npu(events, devices=NPU0, fmt="ascend", metrics=None):
    return table(events, devices=devices, fmt=fmt, metrics=metrics)  # metrics in time order: every test's ts differ


def test_core_times_and_ai_core_utilisation_by_hand():
    """Span: steps [0,100) and [200,300) (200 ns); a step at -1 has no place on the clock and is left out (placed it
    would cover [-1,500)). Tasks, inside the span:
      cube [10,40) 30; vector [30,50) 20; MIX_AIC [90,110) 10; MIX_AIV [250,260) 10; AI CPU [260,360) 40;
      a task of no core [280,285) 5; an HCCL task [0,300) is no compute task.
    busy (not the AI CPU): [10,50) 40 + [90,100) 10 + [250,260) 10 + [280,285) 5 = 65; utilisation 65 / 200;
    cube 30, vector 20, mix 20, AI CPU 40; cube share 30 / (30 + 20 + 20)."""
    t = _npu([_kernel(10, 30, "AI_CORE"), _kernel(30, 20, "AI_VECTOR_CORE"), _kernel(90, 20, "MIX_AIC"),
              _kernel(250, 10, "MIX_AIV"), _kernel(260, 100, "AI_CPU"), ev("nc", K.KERNEL, 280, 5, device=0),
              ev("hcom_allReduce_", K.COMM_KERNEL, 0, 300, device=0)])
    (got,) = nm.npu_efficiency(t, [0, 200, -1], [100, 300, 500])
    assert (got.device, got.name, got.span_ns, got.ai_core_busy_ns) == (0, "Ascend910B", 200, 65)
    assert (got.cube_ns, got.vector_ns, got.mix_ns, got.ai_cpu_ns) == (30, 20, 20, 40)
    assert got.ai_core_utilization == 65 / 200 and got.cube_share == 30 / 70
    assert list(got.pmu) == []


def test_without_an_ai_cpu_task_every_task_is_ai_core_time():
    """No AI_CPU string in the table: every task counts as busy. [0,10) and [20,30) in span [0,40): 20 / 40."""
    t = _npu([_kernel(0, 10, "AI_CORE"), _kernel(20, 10, "AI_VECTOR_CORE")])
    (got,) = nm.npu_efficiency(t, [0], [40])
    assert (got.ai_core_busy_ns, got.ai_core_utilization, got.cube_share) == (20, 0.5, 0.5)


def test_no_span_makes_every_inside_figure_unknown():
    """Every step unplaced: span 0, so busy, the core times, utilisation and cube share are -1 (unknown)."""
    t = _npu([_kernel(10, 30, "AI_CORE"), _kernel(50, 10, "AI_CPU")])
    (got,) = nm.npu_efficiency(t, [-1], [100])
    assert (got.span_ns, got.ai_core_busy_ns, got.cube_ns, got.vector_ns, got.mix_ns, got.ai_cpu_ns) == \
        (0, -1, -1, -1, -1, -1)
    assert (got.ai_core_utilization, got.cube_share) == (-1.0, -1.0)


def test_only_ai_cpu_time_has_no_cube_share():
    """One AI CPU task [0,10) in span [0,10): cube + vector + mix = 0, so the share is unknown; busy 0."""
    t = _npu([_kernel(0, 10, "AI_CPU")])
    (got,) = nm.npu_efficiency(t, [0], [10])
    assert (got.ai_cpu_ns, got.ai_core_busy_ns, got.ai_core_utilization, got.cube_share) == (10, 0, 0.0, -1.0)


def test_one_entry_per_npu_named_from_the_devices():
    """Devices 0 (named) and 1 (no name: "NPU 1"), and tasks of no device (-1) that are left out because the files
    name devices. Device 1's task [5,10) in span [0,10): 5 / 10."""
    devices = [{"kind": "npu", "index": 0, "name": "Ascend910B"}, {"kind": "npu", "index": 1, "name": ""}]
    t = _npu([_kernel(0, 10, "AI_CORE", device=0), _kernel(5, 5, "AI_CORE", device=1),
              _kernel(1, 9, "AI_CORE", device=-1)], devices=devices, fmt="kineto")
    got = nm.npu_efficiency(t, [0], [10])
    assert [(g.device, g.name, g.ai_core_busy_ns, g.cube_ns) for g in got] == \
        [(0, "Ascend910B", 10, 10), (1, "NPU 1", 5, 5)]


def test_tasks_of_no_device_are_the_windows_one_npu():
    """kernel_details.csv without Device_id: every task at device -1, one entry -1; its name is the device entry
    that has no index, else the fallback."""
    rows = [_kernel(0, 4, "AI_CORE", device=-1), _kernel(2, 4, "AI_CORE", device=-1)]
    (got,) = nm.npu_efficiency(_npu(rows, devices=[{"kind": "npu", "name": "Ascend 910B4"}]), [0], [10])
    assert (got.device, got.name, got.ai_core_busy_ns, got.cube_ns) == (-1, "Ascend 910B4", 6, 8)  # [0,6); 4 + 4
    (got,) = nm.npu_efficiency(_npu(rows, devices=[{"kind": "npu", "index": 0, "name": "X"}]), [0], [10])
    assert got.name == "NPU (index not in the files)"


def test_a_device_entry_with_index_none_is_device_0():
    t = _npu([_kernel(0, 4, "AI_CORE")], devices=[{"kind": "npu", "index": None, "name": "Ascend 310P"}])
    assert nm.npu_efficiency(t, [0], [10])[0].name == "Ascend 310P"


def test_which_windows_are_npu_windows():
    """An Ascend folder, or any window with a device of kind npu (any case); a GPU window has none; an NPU window
    without compute tasks has none."""
    rows = [_kernel(0, 4, "AI_CORE")]
    assert len(nm.npu_efficiency(_npu(rows, devices=[{"kind": "NPU", "index": 0}], fmt="kineto"), [0], [10])) == 1
    assert nm.npu_efficiency(_npu(rows, devices=[{"kind": "cuda", "index": 0}], fmt="kineto"), [0], [10]) == []
    assert nm.npu_efficiency(_npu(rows, devices=[{"index": 0}], fmt="kineto"), [0], [10]) == []
    assert nm.npu_efficiency(_npu([ev("aten::mm", K.CPU_OP, 0, 5)]), [0], [10]) == []


def test_pmu_ratios_weighted_by_their_core_time():
    """Three tasks (time order), dur 10, 20, 30:
      aic_mac_ratio 0.5, 0.25, NaN with aic_time_ns 10, 30, 40: (0.5 x 10 + 0.25 x 30) / 40 = 12.5 / 40, 2 tasks;
      aiv_vec_ratio 0.2, 0.8, 0.4 with aiv_time_ns 0, NaN, 20: only the third weighs, 0.4; 3 tasks carry it;
      cube_utilization_pct 10, 40, NaN by duration: (10 x 10 + 40 x 20) / 30 = 30, 2 tasks;
      aic_fixpipe_ratio NaN everywhere: absent; aic_time_ns, aiv_time_ns, mix_block_dim, flops: not PMU ratios."""
    nan = math.nan
    t = _npu([_kernel(0, 10, "AI_CORE"), _kernel(20, 20, "AI_CORE"), _kernel(50, 30, "AI_VECTOR_CORE")],
             metrics={"aic_mac_ratio": [0.5, 0.25, nan], "aic_time_ns": [10, 30, 40],
                      "aiv_vec_ratio": [0.2, 0.8, 0.4], "aiv_time_ns": [0, nan, 20],
                      "cube_utilization_pct": [10, 40, nan], "aic_fixpipe_ratio": [nan, nan, nan],
                      "mix_block_dim": [1, 2, 3], "flops": [1, 1, 1]})
    (got,) = nm.npu_efficiency(t, [0], [100])
    assert [(p.name, p.value, p.tasks) for p in got.pmu] == \
        [("aic_mac_ratio", 12.5 / 40, 2), ("aiv_vec_ratio", 0.4, 3), ("cube_utilization_pct", 30.0, 2)]


def test_a_ratio_whose_core_time_is_missing_or_zero_is_left_out():
    """aic_mac_ratio without an aic_time_ns column: no weight, no value. aiv_vec_ratio whose aiv time is 0 for
    every carrier: no value either."""
    t = _npu([_kernel(0, 10, "AI_CORE")], metrics={"aic_mac_ratio": [0.5], "aiv_vec_ratio": [0.3],
                                                   "aiv_time_ns": [0]})
    assert list(nm.npu_efficiency(t, [0], [100])[0].pmu) == []


def test_pmu_means_per_group():
    """Rows 0..3 in groups 1, 0, 1, 1 of 3 (group 2 has none): cube_utilization_pct by duration
    (dur 10, 20, 30, 40; values 50, 20, NaN, 100): group 0 = 20, group 1 = (50 x 10 + 100 x 40) / 50 = 90,
    group 2 NaN. Only rows 0..3 of a 5-row table are read (row 4's value 1000 would move group 1)."""
    t = _npu([_kernel(i * 100, (i + 1) * 10, "AI_CORE") for i in range(5)],
             metrics={"cube_utilization_pct": [50, 20, math.nan, 100, 1000]})
    got = nm.pmu_means(t, np.arange(4), np.array([1, 0, 1, 1]), 3)
    assert list(got) == ["cube_utilization_pct"]
    assert got["cube_utilization_pct"][:2].tolist() == [20.0, 90.0] and math.isnan(got["cube_utilization_pct"][2])


def test_pmu_means_with_core_times_of_a_nanosecond_or_less():
    """aic_time_ns below and at 1 ns (a CSV's microseconds): group 0 one task, 0.25 at 0.5 ns: 0.25;
    group 1 0.25 at 0.5 ns and 0.75 at 1 ns: (0.125 + 0.75) / 1.5 = 0.875 / 1.5."""
    t = _npu([_kernel(i * 100, 10, "AI_CORE") for i in range(3)],
             metrics={"aic_mac_ratio": [0.25, 0.25, 0.75], "aic_time_ns": [0.5, 0.5, 1.0]})
    got = nm.pmu_means(t, np.arange(3), np.array([0, 1, 1]), 2)["aic_mac_ratio"]
    assert got[0] == 0.25 and math.isclose(got[1], 0.875 / 1.5, rel_tol=1e-12)


def test_an_ascend_folder_is_an_npu_window_whatever_its_devices_say():
    """format "ascend", no device entries: one entry for device 0, named "NPU 0"."""
    (got,) = nm.npu_efficiency(_npu([_kernel(0, 4, "AI_CORE")], devices=[]), [0], [10])
    assert (got.device, got.name, got.cube_ns) == (0, "NPU 0", 4)


def test_a_task_of_no_core_is_busy_time_when_no_task_is_on_the_ai_cpu():
    """No AI_CPU string in the table; cube [0,10) and a task without core [20,30) in span [0,40): busy 20."""
    t = _npu([_kernel(0, 10, "AI_CORE"), ev("k2", K.KERNEL, 20, 10, device=0)])
    (got,) = nm.npu_efficiency(t, [0], [40])
    assert (got.ai_core_busy_ns, got.cube_ns) == (20, 10)


def test_ai_cpu_as_the_tables_first_string():
    """A nameless AI CPU task first: "AI_CPU" is string 0 of the table. AI CPU [0,10) and cube [20,30) in span
    [0,40): busy 10 (the cube task only), AI CPU 10."""
    t = _npu([ev(None, K.KERNEL, 0, 10, core="AI_CPU", device=0), _kernel(20, 10, "AI_CORE")])
    assert t.strings.find("AI_CPU") == 0
    (got,) = nm.npu_efficiency(t, [0], [40])
    assert (got.ai_core_busy_ns, got.ai_cpu_ns, got.cube_ns) == (10, 10, 10)


def test_a_span_of_one_nanosecond():
    """Span [0,1), cube task [0,1): utilisation 1 / 1, cube share 1 / 1."""
    (got,) = nm.npu_efficiency(_npu([_kernel(0, 1, "AI_CORE")]), [0], [1])
    assert (got.span_ns, got.ai_core_busy_ns, got.ai_core_utilization, got.cube_ns, got.cube_share) == \
        (1, 1, 1.0, 1, 1.0)
