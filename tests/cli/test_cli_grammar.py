"""One grammar: `canning-prof <subcommand> [options]`, the `--mode=` forms kept as aliases, and the
profiler switches of `performance` reaching the profiler (read back from the window's manifest)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from canning_tb.cli.main import _parser, main, mode_alias

CLI = [sys.executable, "-m", "canning_tb.cli.main"]


def run_cli(*args, cwd=None):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.mark.parametrize("argv, expected", [
    (["--mode=view", "--input=x"], ["view", "--input=x"]),
    (["--mode", "compare", "--base=a", "--input=b"], ["compare", "--base=a", "--input=b"]),
    (["--output=o", "--mode=performance", "python", "t.py"], ["performance", "--output=o", "python", "t.py"]),
    (["--output", "o", "--mode", "performance", "t.py"], ["performance", "--output", "o", "t.py"]),
    # the script's own --mode is the script's: never taken for ours
    (["--mode=performance", "python", "t.py", "--mode=eval"], ["performance", "python", "t.py", "--mode=eval"]),
    (["performance", "python", "t.py", "--mode=eval"], ["performance", "python", "t.py", "--mode=eval"]),
    (["view", "--input=x"], ["view", "--input=x"]),
])
def test_mode_alias_moves_the_mode_first(argv, expected):
    assert mode_alias(argv) == expected


def test_each_subcommand_parses_and_the_alias_is_the_same():
    p = _parser()
    for new, old in (
            (["view", "--input=r", "--format=json", "--detail"], ["--mode=view", "--input=r", "--format=json", "--detail"]),
            (["compare", "--base=a", "--input=b", "--fail-on-regression=5"],
             ["--mode=compare", "--base=a", "--input=b", "--fail-on-regression=5"]),
            (["performance", "--output=o", "python", "t.py", "1"], ["--mode=performance", "--output=o", "python", "t.py", "1"])):
        a, b = p.parse_args(new), p.parse_args(mode_alias(old))
        assert vars(a) == vars(b)
        assert a.mode == new[0]
    perf = p.parse_args(["performance", "python", "t.py", "--epochs", "2"])
    assert perf.command == ["python", "t.py", "--epochs", "2"]
    # the cheap switch on, the costly ones off, each with its --no- form
    assert (perf.record_shapes, perf.with_stack, perf.profile_memory) == (True, False, False)
    flipped = p.parse_args(["performance", "--no-record-shapes", "--with-stack", "--profile-memory", "t.py"])
    assert (flipped.record_shapes, flipped.with_stack, flipped.profile_memory) == (False, True, True)


def test_view_needs_input_and_unknown_subcommands_fail(capsys):
    with pytest.raises(SystemExit) as e:
        main(["view"])
    assert e.value.code == 2 and "--input" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["nonsense"])


def test_help_lists_every_subcommand():
    p = run_cli("--help")
    assert p.returncode == 0
    for name in ("performance", "view", "compare", "capture", "digest", "mcp", "sql"):
        assert name in p.stdout
    assert "--mode=view" in p.stdout  # the alias is documented


def test_digest_capture_mcp_are_subcommands_with_their_own_help():
    for name in ("digest", "capture", "mcp", "sql"):
        p = run_cli(name, "--help")
        assert p.returncode == 0, (name, p.stderr)
        assert "usage:" in p.stdout


def test_view_subcommand_and_alias_give_the_same_json(tmp_path):
    torch = pytest.importorskip("torch")
    trace = tmp_path / "t.pt.trace.json"
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        torch.randn(64, 64).mm(torch.randn(64, 64))
    prof.export_chrome_trace(str(trace))
    new = run_cli("view", f"--input={trace}", "--format=json", f"--cache-dir={tmp_path / 'c'}")
    old = run_cli("--mode=view", f"--input={trace}", "--format=json", f"--cache-dir={tmp_path / 'c'}")
    assert new.returncode == old.returncode == 0, new.stderr + old.stderr
    assert json.loads(new.stdout) == json.loads(old.stdout)
    (w,) = json.loads(new.stdout)["windows"]
    # no ProfilerStep ranges and no manifest: one step, and the report says so
    assert w["figures"]["steps"] == 1 and w["figures"]["step_source"] == "window"
    assert "ONE step" in w["figures"]["step_note"]
    text = run_cli("view", f"--input={trace}", f"--cache-dir={tmp_path / 'c'}").stdout
    assert "steps 1 (the whole window: no step marks)" in text and "ONE step" in text
    cmp = run_cli("compare", f"--base={trace}", f"--input={trace}", "--format=json", f"--cache-dir={tmp_path / 'c'}")
    assert cmp.returncode == 0, cmp.stderr


SCRIPT = textwrap.dedent("""
    import torch
    model = torch.nn.Linear(32, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(6):
        loss = model(torch.randn(16, 32)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
""")


@pytest.mark.slow
@pytest.mark.parametrize("flags, expected", [
    ([], {"record_shapes": True, "with_stack": False, "profile_memory": False}),
    (["--no-record-shapes", "--with-stack", "--profile-memory"],
     {"record_shapes": False, "with_stack": True, "profile_memory": True}),
])
def test_performance_flags_reach_the_profiler(tmp_path, flags, expected):
    pytest.importorskip("torch")
    (tmp_path / "train.py").write_text(SCRIPT)
    out = tmp_path / "prof"
    p = run_cli("performance", f"--output={out}", *flags, "python", str(tmp_path / "train.py"), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    (man,) = [f for f in os.listdir(out) if f.endswith(".canning.json")]
    settings = json.loads((out / man).read_text())["settings"]
    assert {k: settings[k] for k in expected} == expected
