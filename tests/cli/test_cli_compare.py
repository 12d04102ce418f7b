"""canning-prof --mode=compare as a CI gate runs it (a real subprocess on real profiles): the exit
status both ways on the real before/after pairs of tests/_compare_pairs.py, the operators named,
the name map file, and the JSON face (docs/cli-json.md)."""
import json
import math
import statistics

import pytest

from _compare_pairs import ACTIVE, step_durations_us, write_all
from test_cli import run_cli
from test_compare_gate import T_TABLE


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_pairs")
    write_all(root)
    return root


def step_mean_ns(folder):
    steps = step_durations_us(str(folder))
    assert len(steps) == ACTIVE
    return 1000 * sum(steps) / len(steps)


def test_gate_fails_on_a_slower_target_and_names_the_cause(pairs, tmp_path):
    p = run_cli("--mode=compare", f"--base={pairs / 'loader_fast'}", f"--input={pairs / 'loader_sleep'}",
                "--fail-on-regression=10", f"--cache-dir={tmp_path}", check=False)
    assert p.returncode == 3, p.stderr
    assert "step time regressed by" in p.stderr and "caused by: dataloader +" in p.stderr
    assert p.stdout.startswith("Verdict: step ") and "x slower)" in p.stdout.splitlines()[0]


def test_gate_passes_on_a_faster_target(pairs, tmp_path):
    p = run_cli("--mode=compare", f"--base={pairs / 'loader_sleep'}", f"--input={pairs / 'loader_fast'}",
                "--fail-on-regression=10", f"--cache-dir={tmp_path}")
    assert p.returncode == 0 and p.stderr == ""


def surely_slower(base_us: list[float], target_us: list[float]) -> bool:
    """The target's mean step above the base's beyond doubt: a Welch interval of the difference whose low end is
    above 0, with the Student t of 4 degrees of freedom (the printed table's, the widest the gate's
    Welch-Satterthwaite count can ask of 5 or more steps a side), so wider than the gate's own."""
    se = math.sqrt(statistics.variance(base_us) / len(base_us) + statistics.variance(target_us) / len(target_us))
    return statistics.fmean(target_us) - statistics.fmean(base_us) - T_TABLE[4] * se > 0


def test_gate_names_the_unfused_operators(pairs, tmp_path):
    base, target = step_mean_ns(pairs / "gelu_fused"), step_mean_ns(pairs / "gelu_unfused")
    change = 100 * (target - base) / base  # the raw traces' own: 76-330 % here, lower when load evens them
    assert change > 4  # the threshold below (half of it) must round to a whole percent above 1
    # the gate fails a run on a change that is also significant; a loaded machine can spread the steps so that
    # it is not (CI: 271 % with the interval reaching 0), and then the gate is right to pass it
    if not surely_slower(step_durations_us(str(pairs / "gelu_fused")), step_durations_us(str(pairs / "gelu_unfused"))):
        pytest.skip(f"the steps spread too much for a significant change ({change:.0f} %): not judged here")
    # a threshold under the change (half of it): the gate on the whole change fails the run (the raw change is
    # the total; the code's part, the default, is judged on real runs in test_compare_gate_runs.py)
    p = run_cli("--mode=compare", f"--base={pairs / 'gelu_fused'}", f"--input={pairs / 'gelu_unfused'}",
                f"--fail-on-regression={change / 2:.0f}", "--gate-on=total", f"--cache-dir={tmp_path}", "--format=json",
                check=False)
    assert p.returncode == 3
    causes = p.stderr.split("caused by: ")[1]
    assert "aten::tanh +" in causes and "aten::mul +" in causes and "aten::gelu" not in causes
    report = json.loads(p.stdout)
    assert report["regression"] and report["mode"] == "compare"
    assert report["summary"]["delta_step_pct"] == pytest.approx(change, abs=0.1)
    assert report["comparison"]["verdict"]["step_time"]["delta_pct"] == pytest.approx(
        report["summary"]["delta_step_pct"])
    # a threshold above the change: the gate passes
    p = run_cli("--mode=compare", f"--base={pairs / 'gelu_fused'}", f"--input={pairs / 'gelu_unfused'}",
                f"--fail-on-regression={change + 50:.0f}", "--gate-on=total", f"--cache-dir={tmp_path}")
    assert p.returncode == 0


def test_name_map_file(pairs, tmp_path):
    names = tmp_path / "names.json"
    names.write_text(json.dumps({"operators": {"aten::gelu": "aten::tanh"}}))
    p = run_cli("--mode=compare", f"--base={pairs / 'gelu_unfused'}", f"--input={pairs / 'gelu_fused'}",
                f"--names={names}", "--format=json", f"--cache-dir={tmp_path}")
    rows = {r["key"]: r for r in json.loads(p.stdout)["comparison"]["operators"]}
    assert rows["aten::tanh"]["status"] == "changed" and rows["aten::tanh"]["target_names"] == ["aten::gelu"]
    names.write_text("{not json")
    p = run_cli("--mode=compare", f"--base={pairs / 'gelu_unfused'}", f"--input={pairs / 'gelu_fused'}",
                f"--names={names}", f"--cache-dir={tmp_path}")
    assert f"name map not used: {names}:" in p.stderr
