"""Shared test settings: where the real fixtures are, and the browser to drive."""
import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# The repository's own copy (tests/fixtures/SOURCES.md): a clone with nothing beside it runs every test.
# CANNING_FIXTURES points at another copy (a writable one, or the mutants' run).
FIXTURES = Path(os.environ.get("CANNING_FIXTURES", REPO / "tests" / "fixtures"))

# Digests go to the user cache, never beside the data: keep the tests' own.
# Removed when the test process ends (a module-level TemporaryDirectory is cleaned up at exit).
_TEST_CACHE = None if "CANNING_CACHE_DIR" in os.environ else tempfile.TemporaryDirectory(prefix="canning-test-cache-")
if _TEST_CACHE is not None:
    os.environ["CANNING_CACHE_DIR"] = _TEST_CACHE.name

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")  # Debian's package, never `playwright install`
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


def pytest_configure(config):
    # the slow tests that `make mutants` keeps ("not slow or peer_oracle"): the markers list is in pyproject.toml
    config.addinivalue_line("markers", "peer_oracle: compares our numbers with a peer tool's (tests/oracles)")


# The compiled parts (setup.py: optional, left out without a C compiler or with CANNING_NO_C=1). A test marked
# `compiled` checks one of them (or all: the marker without names), and is skipped where it is not built.
NATIVE = ("_ascend_scan", "_kineto_scan", "_kineto_sweep", "_tree")


def _built(name: str) -> bool:
    import importlib
    try:
        importlib.import_module(f"canning_tb.ingest.native.{name}")
    except ImportError:
        return False
    return True


def pytest_runtest_setup(item):
    for mark in item.iter_markers("compiled"):
        if not all(_built(n) for n in mark.args or NATIVE):  # one reason for all: -ra counts them together
            pytest.skip("a compiled part is not built here (no C compiler, or CANNING_NO_C=1)")


def fixture_path(*parts: str) -> Path:
    """A real fixture. When it is absent (a CANNING_FIXTURES that names a partial copy): a failure in CI
    (the env var CI is set there), so a missing folder cannot turn ~150 tests into a passing run; a skip
    elsewhere."""
    p = FIXTURES.joinpath(*parts)
    if not p.exists():
        msg = f"fixture {p} not present (expected in tests/fixtures, or under CANNING_FIXTURES)"
        if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
            pytest.fail(msg + "; CI must have it", pytrace=False)
        pytest.skip(msg)
    return p


def read_db(path):
    """A second reading of a fixture's SQLite export that changes nothing: `immutable=1` (a read-only
    open of a WAL database still creates -shm / -wal beside it, as root even in a read-only folder)."""
    import sqlite3
    return sqlite3.connect(Path(path).resolve().as_uri() + "?immutable=1", uri=True)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):  # pytest-playwright hook
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture
def errors(page):
    """The browser's console errors and uncaught page errors, as they come (browser tests)."""
    errs = []
    page.on("console", lambda m: m.type == "error" and errs.append(m.text))
    page.on("pageerror", lambda e: errs.append(str(e)))
    return errs


@pytest.fixture(scope="session")
def fresh_trace(tmp_path_factory):
    """A real torch.profiler run (CPU, record_shapes, profile_memory, with_stack) of this torch: the path of
    its gzipped trace (tests/_gen_trace.py)."""
    pytest.importorskip("torch")
    import glob
    import _gen_trace
    out = tmp_path_factory.mktemp("fresh")
    _gen_trace.main(str(out), active=2, gzip=True)
    (path,) = glob.glob(str(out / "*.pt.trace.json.gz"))
    return path


# Per-marker timeouts over pyproject's default (300 s): real multi-process training and a real browser take longer.
MARKER_TIMEOUT_S = {"slow": 1800, "browser": 900}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("timeout") is not None:
            continue  # the test's own limit
        limits = [s for m, s in MARKER_TIMEOUT_S.items() if item.get_closest_marker(m) is not None]
        if limits:
            item.add_marker(pytest.mark.timeout(max(limits)))


@pytest.fixture(autouse=True)
def _canning_settings_untouched():
    """A test leaves canning's settings (the CANNING_* environment) as it found them: one that set
    CANNING_FOLLOW_LINKS in-process once made the later link tests of its worker fail, far from the cause.
    The test that changed them fails here, naming them (and they are put back)."""
    before = {k: v for k, v in os.environ.items() if k.startswith("CANNING_")}
    yield
    after = {k: v for k, v in os.environ.items() if k.startswith("CANNING_")}
    if after == before:
        return
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    for k in changed:
        if k in before:
            os.environ[k] = before[k]
        else:
            os.environ.pop(k, None)
    pytest.fail(f"the test changed canning's settings in this process and left them: {changed}", pytrace=False)
