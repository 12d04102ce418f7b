"""The compiled parts read bytes that anyone who can write to a logdir controls. Compiled here with
AddressSanitizer and UndefinedBehaviorSanitizer, each must read its inputs without one sanitizer report:
the trace scanner (ingest/native/ascend_scan.c) every fixture trace, edge inputs (empty, cut at every kind of
token, nesting at and past its limit, 10 MB strings, 5,000-digit numbers, counters at and past 8 args) and
5,000 random edits and truncations of a real piece; the Python frames' sweep (native/kineto_sweep.c) no rows, a stack 200,000 frames deep, and 300 random threads of frames and ops. The child
interpreter loads the sanitizer runtimes first (LD_PRELOAD), as they require; each input is an exact-size
buffer, so a read one byte past its end is caught."""
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import fixture_path

SOURCES = Path(__file__).resolve().parents[2] / "src" / "canning_tb" / "ingest" / "native"

CHILD = r'''
import json, random, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import _ascend_scan as _scan


def scan(text):  # an exact-size buffer (bytes keep a NUL past their end, which would hide a read one byte past)
    return _scan.scan(np.frombuffer(text, np.uint8).copy())


texts = [open(p, "rb").read() for p in sys.argv[2:]]
for t in texts:
    assert scan(t) is not None, "a fixture trace declined"
edge = [b"", b"[", b"]", b"[]", b"[ ]", b"[{", b"[{}]", b"[{}", b'[{"', b'[{"ph"', b'[{"ph":', b'[{"ph":"X"',
        b'[{"ph":"X",', b'[{"a":' + b"[" * 63 + b"]" * 63 + b"}]", b'[{"a":' + b"[" * 64 + b"]" * 64 + b"}]",
        b'[{"a":' + b"[" * 100000 + b"]", b'[{"name":"' + b"x" * 10000000 + b'"}]', b'[{"ts":' + b"9" * 5000 + b"}]",
        b'[{"ph":"C","args":{%s}}]' % b",".join(b'"k%d":1' % i for i in range(8)),
        b'[{"ph":"C","args":{%s}}]' % b",".join(b'"k%d":1' % i for i in range(9)),
        b'[{"ph":"C","args":{"' + b"k" * 2000 + b'":1,"' + b"j" * 2000 + b'id":2}}]',
        b'[{"ph":"X","ts":"1.000","dur":1e308,"args":{"flops":' + b"1" * 70 + b"}}]",
        b'[{"ph":"X","ts":"1.000","args":{' + b",".join(b'"a%d":%d' % (i, i) for i in range(100)) + b',"stream id":3}}]',
        b'[{"n":"\xf0\x9f\x98\x80"}]', b'[{"n":"\xf0\x9f\x98"}]', b'[{"ph":"X","ts":"' + b"1" * 16 + b'.999"}]',
        b'[{"ph":"s","id":-9223372036854775808,"ts":"1.000","cat":"async_npu"}]', b'[{"ph":"X","ts":-9223372036854775808}]']
for e in edge:
    scan(e)
rng = random.Random(20261202)
base = json.dumps(json.loads(texts[-1])[:300], ensure_ascii=False).encode()
alphabet = b'{}[]",:\\/0123456789.-+eEtrufalsnXC \x00\x1f\x7f\x80\xbf\xc2\xe0\xed\xf0\xf4\xff'
taken = 0
for i in range(5000):
    b = bytearray(base[:rng.randrange(1000, len(base))]) if i % 5 == 0 else bytearray(base)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(0, len(b))
        op = rng.random()
        if op < 0.25:
            del b[at:at + rng.randint(1, 20)]
        elif op < 0.6:
            b[at] = rng.choice(alphabet)
        elif op < 0.85:
            b.insert(at, rng.choice(alphabet))
        else:
            lo = rng.randrange(0, len(b))
            b[at:at] = b[lo:lo + rng.randint(1, 300)]
    taken += scan(bytes(b)) is not None
print("scanned; taken whole:", taken)
'''


def _runtime(name: str) -> str:
    path = subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(path):
        pytest.fail(f"gcc has no {name}: the sanitizers cannot run here")
    return path


def _run_sanitized(tmp_path, module: str, child: str, args: list[str]) -> str:
    """Build ingest/native/<module>.c (ascend_scan ...) with the sanitizers as the module _<module>, run the
    child script with it importable; its stdout."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc: the compiled parts are not built here either (test_trace_scan)")
    built = tmp_path / ("_" + module + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                    "-fno-omit-frame-pointer", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                    str(SOURCES / f"{module}.c"), "-o", str(built)], check=True, capture_output=True, timeout=120)
    (tmp_path / "child.py").write_text(child)
    env = {**os.environ, "LD_PRELOAD": f"{_runtime('libasan.so')}:{_runtime('libubsan.so')}",
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1", "UBSAN_OPTIONS": "print_stacktrace=1"}
    done = subprocess.run([sys.executable, str(tmp_path / "child.py"), str(tmp_path), *args], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "runtime error" not in done.stderr, done.stderr[-4000:]
    return done.stdout


def test_the_scanner_reads_hostile_bytes_without_a_sanitizer_report(tmp_path):
    traces = [str(fixture_path("ascend", level, f"rank{rank}_ascend_pt", "ASCEND_PROFILER_OUTPUT", "trace_view.json"))
              for level in ("level0", "level1", "level2") for rank in (0, 1)]
    taken = int(_run_sanitized(tmp_path, "ascend_scan", CHILD, traces).split("taken whole:")[1])
    assert taken > 500  # the edits left many pieces whole: the scanner's accepting paths ran to their end


SWEEP_CHILD = r'''
import random, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import _kineto_sweep as _sweep


def sweep(thread, start, end, name, hidden, frame):  # exact-size copies: a read past an end is past a buffer
    return _sweep.sweep(*(np.array(a, t) for a, t in ((thread, np.int64), (start, np.int64), (end, np.int64),
                                                      (name, np.int32), (hidden, np.uint8), (frame, np.uint8))))


sweep([], [], [], [], [], [])
n = 200000  # one thread 200,000 frames deep, each a path of its own: the stack and the path table grow
sweep([0] * n, list(range(n)), [2 * n] * n, list(range(n)), [0] * n, [1] * n)
sweep([0] * n, list(range(n)), [2 * n] * n, [7] * n, [1] * n, [1] * n)  # all hidden: no path at all
rng = random.Random(20261202)
paths = 0
for _ in range(300):
    k = rng.randint(1, 3000)
    rows = sorted((rng.randrange(4), rng.randrange(100)) for _ in range(k))
    got = sweep([r[0] for r in rows], [r[1] for r in rows], [r[1] + rng.choice([0, 1, 5, 50]) for r in rows],
                [rng.randrange(50) for _ in rows], [rng.random() < 0.2 for _ in rows], [rng.random() < 0.7 for _ in rows])
    paths += len(got[2]) // 16
print("paths:", paths)
'''


def test_the_stack_sweep_runs_without_a_sanitizer_report(tmp_path):
    paths = int(_run_sanitized(tmp_path, "kineto_sweep", SWEEP_CHILD, []).split("paths:")[1])
    assert paths > 1000
