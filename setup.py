"""Build hook: the wheel must hold the frontend bundle (src/canning_tb/plugin/static/index.js),
which is built, not committed; and four small C parts are compiled where a C compiler is found: the
Ascend trace scanner (src/canning_tb/ingest/native/ascend_scan.c), the Python frames' sweep
(src/canning_tb/ingest/native/kineto_sweep.c) and the Kineto trace scanner (_scan.c beside it; both scanners
include src/canning_tb/ingest/native/json_lex.h) and the events' nesting sweep (src/canning_tb/ingest/native/tree.c). All are optional: without them the same columns come from msgspec,
numpy and a Python loop, slower. Everything else is in pyproject.toml.

`pip install .` / `pip install -e .` / `pip wheel .` run `npm ci && npm run build` in
src/canning_tb/frontend/ when the bundle is missing (CANNING_REBUILD_FRONTEND=1 forces a rebuild).
By hand: cd src/canning_tb/frontend && npm ci && npm run build. The TypeScript sources are not
package data (pyproject.toml lists only plugin/static/*): the wheel holds the bundle alone.
"""
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
FRONTEND = os.path.join(HERE, "src", "canning_tb", "frontend")
BUNDLE = os.path.join(HERE, "src", "canning_tb", "plugin", "static", "index.js")


def build_frontend():
    if os.path.exists(BUNDLE) and os.environ.get("CANNING_REBUILD_FRONTEND") != "1":
        return
    if not os.path.isdir(FRONTEND):
        raise SystemExit(f"canning-tb: the frontend bundle {BUNDLE} is missing and there is no {FRONTEND} folder to build it from")
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit(
            "canning-tb: building the TensorBoard plugin's frontend needs Node.js >= 18 and npm on PATH "
            "(https://nodejs.org). Install them, or build the bundle first: cd src/canning_tb/frontend && npm ci && npm run build")
    install = "ci" if os.path.exists(os.path.join(FRONTEND, "package-lock.json")) else "install"
    for cmd in ([npm, install, "--no-audit", "--no-fund"], [npm, "run", "build"]):
        print("canning-tb:", " ".join(cmd), "in", FRONTEND, flush=True)
        subprocess.run(cmd, cwd=FRONTEND, check=True)
    if not os.path.exists(BUNDLE):
        raise SystemExit(f"canning-tb: npm run build did not write {BUNDLE}")


class BuildPyWithFrontend(build_py):
    def run(self):
        build_frontend()
        self.__dict__.pop("data_files", None)  # recompute package data: the bundle may be new
        super().run()


# the strict JSON lexer both trace scanners include
LEXER = "src/canning_tb/ingest/native/json_lex.h"
SCANNER = Extension("canning_tb.ingest.native._ascend_scan", ["src/canning_tb/ingest/native/ascend_scan.c"], depends=[LEXER],
                    extra_compile_args=["-O2"], optional=True)
SWEEP = Extension("canning_tb.ingest.native._kineto_sweep", ["src/canning_tb/ingest/native/kineto_sweep.c"],
                  extra_compile_args=["-O2"], optional=True)

TREE = Extension("canning_tb.ingest.native._tree", ["src/canning_tb/ingest/native/tree.c"], extra_compile_args=["-O2"],
                 optional=True)
KINETO_SCANNER = Extension("canning_tb.ingest.native._kineto_scan", ["src/canning_tb/ingest/native/kineto_scan.c"], depends=[LEXER],
                           extra_compile_args=["-O2"], optional=True)

# CANNING_NO_C=1: none of them, as where no C compiler is found (make test-nocc installs the package so)
EXTENSIONS = [] if os.environ.get("CANNING_NO_C") == "1" else [SCANNER, SWEEP, KINETO_SCANNER, TREE]

setup(cmdclass={"build_py": BuildPyWithFrontend}, ext_modules=EXTENSIONS)
