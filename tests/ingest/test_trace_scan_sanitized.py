"""The trace scanner (ingest/ascend/_scan.c) reads bytes that anyone who can write to a logdir controls:
compiled here with AddressSanitizer and UndefinedBehaviorSanitizer, it must read every fixture trace, edge
inputs (empty, cut at every kind of token, nesting at and past its limit, 10 MB strings, 5,000-digit
numbers, counters at and past 8 args) and 5,000 random edits and truncations of a real piece without one
sanitizer report. The child interpreter loads the sanitizer runtimes first (LD_PRELOAD), as they require;
each input is an exact-size buffer, so a read one byte past its end is caught."""
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import fixture_path

SOURCE = Path(__file__).resolve().parents[2] / "src" / "canning_tb" / "ingest" / "ascend" / "_scan.c"

CHILD = r'''
import json, random, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import _scan


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


def test_the_scanner_reads_hostile_bytes_without_a_sanitizer_report(tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("no gcc: the scanner is not built here either (test_trace_scan.test_the_scanner_is_built)")
    traces = [str(fixture_path("ascend", level, f"rank{rank}_ascend_pt", "ASCEND_PROFILER_OUTPUT", "trace_view.json"))
              for level in ("level0", "level1", "level2") for rank in (0, 1)]
    module = tmp_path / ("_scan" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                    "-fno-omit-frame-pointer", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                    str(SOURCE), "-o", str(module)], check=True, capture_output=True, timeout=120)
    (tmp_path / "child.py").write_text(CHILD)
    env = {**os.environ, "LD_PRELOAD": f"{_runtime('libasan.so')}:{_runtime('libubsan.so')}",
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1", "UBSAN_OPTIONS": "print_stacktrace=1"}
    done = subprocess.run([sys.executable, str(tmp_path / "child.py"), str(tmp_path), *traces], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "runtime error" not in done.stderr, done.stderr[-4000:]
    taken = int(done.stdout.split("taken whole:")[1])
    assert taken > 500  # the edits left many pieces whole: the scanner's accepting paths ran to their end
