"""The C modules compiled for fuzzing: clang with AddressSanitizer, UndefinedBehaviorSanitizer (every
check aborts, none recovers) and libFuzzer's coverage counters (-fsanitize=fuzzer-no-link), into a folder
of bare-named modules (_ascend_scan...). atheris ships the runtime for such code, libFuzzer and ASan with
UBSan in one library (asan_with_fuzzer.so): the child interpreter must load it first (LD_PRELOAD)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

NATIVE = Path(__file__).resolve().parents[1]
MODULES = ("ascend_scan", "kineto_scan", "kineto_sweep", "tree")
FLAGS = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined,fuzzer-no-link",
         "-fno-sanitize-recover=all", "-shared", "-fPIC"]


class Unavailable(RuntimeError):
    """No clang or no atheris here: nothing can be fuzzed (the reason is the message)."""


def runtime() -> str:
    """atheris's libFuzzer + ASan + UBSan runtime, for LD_PRELOAD."""
    try:
        import atheris
    except ImportError:
        raise Unavailable("atheris is not installed (pip install atheris; pyproject's test extra)") from None
    path = Path(atheris.path()) / "asan_with_fuzzer.so"
    if not path.exists():
        raise Unavailable(f"atheris has no {path.name} at {path.parent}")
    return str(path)


def compile_all(out: Path, modules=MODULES) -> Path:
    """Each module built into `out` under its import name (_tree.cpython-311-...so); `out` back."""
    clang = shutil.which(os.environ.get("CLANG", "clang"))
    if clang is None:
        raise Unavailable("no clang on PATH (Debian: apt-get install clang): libFuzzer's coverage needs it")
    out.mkdir(parents=True, exist_ok=True)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for name in modules:
        done = subprocess.run([clang, *FLAGS, f"-I{sysconfig.get_paths()['include']}", str(NATIVE / f"{name}.c"),
                               "-o", str(out / f"_{name}{suffix}")], capture_output=True, text=True, timeout=300)
        if done.returncode:
            raise RuntimeError(f"clang failed on {name}.c:\n{done.stderr[-3000:]}")
    return out


def child_env(built: Path) -> dict:
    """The environment of a target's interpreter: the runtime loaded first, the sanitized modules importable,
    every report fatal (a crash file for libFuzzer), Python's own leaks not reported."""
    return {**os.environ, "LD_PRELOAD": runtime(), "CANNING_FUZZ_BUILD": str(built),
            "ASAN_OPTIONS": "detect_leaks=0:allocator_may_return_null=1:handle_abort=1",
            "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
