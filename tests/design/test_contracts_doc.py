"""docs/CONTRACTS.md names, for every part, the tests that hold it to its contract ("Tested by"): every
test folder and file it names exists, every part's row names one, and every test folder is named."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "CONTRACTS.md").read_text(encoding="utf-8")


def rows() -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in DOC.splitlines()
            if line.startswith("| `src/")]


def test_every_part_names_its_tests_and_they_exist():
    table = rows()
    assert len(table) >= 12 and all(len(row) == 3 for row in table)
    named = set()
    for part, _, tested_by in table:
        paths = re.findall(r"tests/[\w/.*]+", tested_by)
        files = re.findall(r"`(test_\w+\.py)`", tested_by)
        assert paths, part
        for path in paths:
            path = path.rstrip(".")
            found = list(REPO.glob(path)) if "*" in path else [REPO / path]
            assert found and all(p.exists() for p in found), (part, path)
            named.add(path.split("/")[1])
        for name in files:
            assert list((REPO / "tests").rglob(name)), (part, name)
    folders = {p.name for p in (REPO / "tests").iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert folders - {"design"} <= named, folders - named


def test_no_line_is_over_300_characters():
    """Long table cells are split into the per-part sections below the table, where a diff can show them."""
    long = [(number, len(line)) for number, line in enumerate(DOC.splitlines(), 1) if len(line) > 300]
    assert not long, long


def backticked_paths(text: str) -> list[str]:
    """Every path a text names in backticks under src/ or tests/ (a glob pattern included; `<part>` is a
    placeholder, not a path)."""
    return [path for path in re.findall(r"`([^`\s]+)`", text)
            if path.startswith(("src/", "tests/")) and "<" not in path]


def missing_paths(text: str) -> list[str]:
    return [path for path in backticked_paths(text)
            if not (list(REPO.glob(path)) if "*" in path else (REPO / path).exists())]


def test_every_path_it_names_exists():
    paths = backticked_paths(DOC)
    assert len(paths) >= 40 and "src/canning_tb/queries/" in paths and "tests/ingest/test_*_scan.py" in paths
    assert not missing_paths(DOC), missing_paths(DOC)


def test_the_path_check_sees_a_missing_path():
    text = "`src/canning_tb/queries/` `src/canning_tb/no_such_part/` `tests/no_such_*.py` `tests/<part>/` `docs/x.md`"
    assert missing_paths(text) == ["src/canning_tb/no_such_part/", "tests/no_such_*.py"]
