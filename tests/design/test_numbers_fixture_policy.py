"""A missing fixtures folder fails the run in CI and skips elsewhere (tests/conftest.py)."""
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO


def run_probe(tmp_path, ci):
    probe = tmp_path / "test_probe.py"
    probe.write_text(textwrap.dedent("""
        from conftest import fixture_path

        def test_needs_a_fixture():
            fixture_path("kineto", "resnet50_v100")
    """))
    (tmp_path / "conftest.py").write_text((REPO / "tests" / "conftest.py").read_text())
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["CANNING_FIXTURES"] = str(tmp_path / "absent")
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:playwright",
                           "--rootdir", str(tmp_path), str(probe)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)


@pytest.mark.parametrize("ci,failed", [("true", True), (None, False), ("false", False)])
def test_missing_fixtures_fail_in_ci_only(tmp_path, ci, failed):
    out = run_probe(tmp_path, ci)
    if failed:
        assert out.returncode == 1 and "1 failed" in out.stdout and "CI must have it" in out.stdout, out.stdout
    else:
        assert out.returncode == 0 and "1 skipped" in out.stdout, out.stdout
