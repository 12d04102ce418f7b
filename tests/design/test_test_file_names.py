"""pytest imports each test file under its bare name (tests/ has no packages, the default "prepend" import mode):
two files of one name in different folders make the second fail to collect ("import file mismatch"), but only
when one run collects both, as `make test` does and a run of one folder does not."""
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_files_share_a_name():
    where = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if "__pycache__" not in path.parts:
            where[path.name].append(str(path.relative_to(TESTS)))
    shared = {name: paths for name, paths in where.items() if len(paths) > 1 and name not in ("__init__.py", "conftest.py")}
    assert shared == {}
