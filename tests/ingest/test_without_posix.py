"""Every platform: every module of canning_tb imports where the POSIX-only modules are missing (fcntl,
resource, termios, as on Windows) and os.fork is gone, and the public readers read a Kineto and an Ascend
fixture there, in-process, to the same events as a reading on this Linux machine (which may fork).

The probe runs in a fresh interpreter: a meta-path finder refuses the three modules before canning_tb loads
(an import a library makes behind its own sys.platform test is told apart: the probe cannot change
sys.platform; a static check then says no module of ours imports them at its top level), and the Kineto trace is read through the two-process planner (its threshold lowered to 1 MiB), which must
then read in one process instead of forking."""
import gzip
import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
from conftest import fixture_path

PROBE = textwrap.dedent("""
    import importlib, importlib.abc, json, os, pkgutil, sys, traceback

    BLOCKED = {"fcntl", "resource", "termios"}

    class NotOnThisPlatform(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked: not on this platform)", name=name)
            return None

    for name in BLOCKED:
        sys.modules.pop(name, None)
    sys.meta_path.insert(0, NotOnThisPlatform())
    del os.fork

    import canning_tb
    OURS = os.path.dirname(canning_tb.__file__) + os.sep

    def importer(e):  # the file whose import statement met the blocked module
        frames = [f for f in traceback.extract_tb(e.__traceback__) if not f.filename.startswith(("<frozen", "<string>"))]
        return frames[-1].filename if frames else "?"

    names = ["canning_tb"]
    for info in pkgutil.walk_packages(canning_tb.__path__, "canning_tb."):
        if info.name.startswith("canning_tb.frontend"):  # TypeScript sources, no Python
            continue
        if info.name.startswith("canning_tb.ingest.native.fuzz."):  # scripts atheris runs (sibling imports), Linux only
            continue
        names.append(info.name)
    failed, theirs = {}, {}
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as e:  # a library's own import behind its sys.platform test is its business
            where = importer(e)
            (failed if where.startswith(OURS) or not isinstance(e, ImportError) else theirs)[name] = f"{where}: {e}"

    from canning_tb.ingest.kineto import parallel
    from canning_tb.ingest.kineto.read import read_kineto
    from canning_tb.ingest.ascend import read_ascend
    parallel.PARALLEL_BYTES = 1 << 20  # the two-process planner, which must not fork here
    out = {"modules": len(names), "failed": failed, "theirs": theirs}
    for key, table in (("kineto", read_kineto(sys.argv[1])), ("ascend", read_ascend(sys.argv[2]))):
        out[key] = [len(table), int(table.events["ts"].sum()), int(table.events["dur"].sum()),
                    sorted(table.name(i) or "" for i in range(len(table)))]
    print(json.dumps(out))
""")


def _fingerprint(table):
    return [len(table), int(np.sum(table.events["ts"])), int(np.sum(table.events["dur"])),
            sorted(table.name(i) or "" for i in range(len(table)))]


def test_imports_and_reads_without_posix_modules_or_fork(tmp_path):
    from canning_tb.ingest.ascend import read_ascend
    from canning_tb.ingest.kineto.read import read_kineto
    trace = tmp_path / "worker0.pt.trace.json"  # plain: big enough for the planner at 1 MiB
    with gzip.open(fixture_path("kineto", "resnet50_v100", "worker0.1623143089861.pt.trace.json.gz")) as src, \
            open(trace, "wb") as dst:
        shutil.copyfileobj(src, dst)
    ascend = fixture_path("ascend", "level0", "rank0_ascend_pt")

    out = subprocess.run([sys.executable, "-c", PROBE, str(trace), str(ascend)], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])

    assert got["failed"] == {}, got["failed"]
    assert got["modules"] > 100, got["modules"]  # the walk found the package, not an empty path
    # mcp's stdio server imports fcntl behind `sys.platform != "win32"`, which this probe cannot change
    assert set(got["theirs"]) <= {"canning_tb.mcp.server", "canning_tb.mcp.cli"}, got["theirs"]
    assert got["kineto"] == _fingerprint(read_kineto(str(trace)))
    assert got["ascend"] == _fingerprint(read_ascend(str(ascend)))
    assert got["kineto"][0] > 1000 and got["ascend"][0] > 100, (got["kineto"][0], got["ascend"][0])


def test_no_module_imports_posix_only_modules_at_its_top_level():
    """Read from the source: an import of fcntl, resource or termios sits inside the function that uses it."""
    import ast
    from pathlib import Path

    import canning_tb
    posix = {"fcntl", "resource", "termios"}
    found = []

    def top_level(node):  # the statements run on import: not inside a function
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield child
                yield from top_level(child)

    for path in Path(canning_tb.__file__).parent.rglob("*.py"):
        if "node_modules" in path.parts:
            continue
        for imp in top_level(ast.parse(path.read_text(), str(path))):
            if isinstance(imp, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in imp.names] if isinstance(imp, ast.Import) else [imp.module or ""]
                found += [f"{path}:{imp.lineno} {m}" for m in mods if m.partition(".")[0] in posix]
    assert found == []
