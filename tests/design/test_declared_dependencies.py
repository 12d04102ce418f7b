"""Every third-party module the tests import comes from a distribution pyproject.toml declares (the
dependencies or the `test` extra), so `pip install -e ".[test]"` is all a fresh machine needs. The
imports are read with ast (nothing is imported), the module -> distribution map is the installed
one (importlib.metadata.packages_distributions). tests/peers/ runs in the peers' own venv (make peers)
and torch_npu is the test double of tests/npu_double/."""
import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
OURS = {"canning", "canning_tb", "torch_npu", "conftest"}


def _local_modules() -> set[str]:
    # the profiler output in tests/fixtures is data, not modules: its folder names (hta, kineto) are not local
    dirs = {p.name for p in TESTS.rglob("*") if p.is_dir() and "fixtures" not in p.relative_to(TESTS).parts[:1]}
    return {p.stem for p in TESTS.rglob("*.py")} | dirs


def imported_top_modules() -> set[str]:
    found = set()
    for path in TESTS.rglob("*.py"):
        if "peers" in path.relative_to(TESTS).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip" and node.args \
                    and isinstance(node.args[0], ast.Constant):
                found.add(str(node.args[0].value).split(".")[0])
    for path in TESTS.rglob("*.py"):  # modules run as `python -m NAME` by the tests (grpc_tools.protoc)
        run = re.findall(r'executable, "-m", "([a-z_.]+)"', path.read_text(encoding="utf-8"))
        found |= {module.split(".")[0] for module in run}
    return found - set(sys.stdlib_module_names) - OURS - _local_modules()


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def declared() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return {_name(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]}


def test_every_module_the_tests_import_is_declared():
    owners = packages_distributions()
    modules = imported_top_modules()
    assert {"torch", "grpc_tools", "playwright", "numpy"} <= modules  # the reading finds them
    missing = {m: owners.get(m, ["not installed"]) for m in sorted(modules)
               if not {_name(d) for d in owners.get(m, [])} & declared()}
    assert missing == {}
