"""The compiled parts read bytes that anyone who can write to a logdir controls. Compiled here with
AddressSanitizer and UndefinedBehaviorSanitizer, each must read its inputs without one sanitizer report:
the trace scanner (ingest/native/ascend_scan.c) every fixture trace, edge inputs (empty, cut at every kind of
token, nesting at and past its limit, 10 MB strings, 5,000-digit numbers, counters at and past 8 args) and
5,000 random edits and truncations of a real piece; the Python frames'
sweep (native/kineto_sweep.c) no rows, a stack 200,000 frames deep, and 300 random threads of frames and ops;
the Kineto scanner (native/kineto_scan.c) every fixture trace, a piece cut at every byte, the edges of its rules
and 5,000 random edits; the tree (native/tree.c) nestings 200,000 deep and in any order, the sums at int64's
extremes (the fuzzer's overflow) and 300 random trees against np.add.at. The child
interpreter loads the sanitizer runtimes first (LD_PRELOAD), as they require; each input is an exact-size
buffer, so a read one byte past its end is caught. (ingest/native/fuzz/ fuzzes the same modules with
libFuzzer: test_native_fuzz.py, `make fuzz`.)"""
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import fixture_path

SOURCES = Path(__file__).resolve().parents[2] / "src" / "canning_tb" / "ingest" / "native"
pytestmark = pytest.mark.compiled  # the C parts' own checks: not in a job that installs none (make test-nocc)

# 5,000 random edits of a real piece (1-8 each: cut, replace, insert, repeat; every fifth also truncated):
# one routine, put at the head of both scanners' children
EDITS = '''
def edits(base, alphabet, rng, count=5000):
    for i in range(count):
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
        yield bytes(b)
'''

CHILD = EDITS + r'''
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
        b'[{"ph":"s","id":-9223372036854775808,"ts":"1.000","cat":"async_npu"}]', b'[{"ph":"X","ts":-9223372036854775808}]',
        # exponents of 10+ digits (the pattern that overflowed an int in _cells.c): the scanners only step over them
        b'[{"ph":"X","ts":1e' + b"9" * 12 + b',"dur":1e-' + b"9" * 12 + b'}]',
        b'[{"ph":"C","args":{"v":1e99999999999,"w":-1E-99999999999,"x":1e+2147483648}}]']
for e in edge:
    scan(e)
rng = random.Random(20261202)
base = json.dumps(json.loads(texts[-1])[:300], ensure_ascii=False).encode()
alphabet = b'{}[]",:\\/0123456789.-+eEtrufalsnXC \x00\x1f\x7f\x80\xbf\xc2\xe0\xed\xf0\xf4\xff'
taken = sum(scan(b) is not None for b in edits(base, alphabet, rng))
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


KINETO_SCAN_CHILD = EDITS + r'''
import gzip, json, random, sys
import msgspec
import numpy as np
sys.path.insert(0, sys.argv[1])
import _kineto_scan as _scan


def scan(text):  # an exact-size buffer, as for the Ascend scanner
    return _scan.scan(np.frombuffer(text, np.uint8).copy())


arrays, damaged = [], []
for path in sys.argv[2:]:
    data = (gzip.open if path.endswith(".gz") else open)(path, "rb").read()
    try:
        arrays.append(bytes(msgspec.json.decode(data, type=dict[str, msgspec.Raw])["traceEvents"]))
    except msgspec.DecodeError:  # a trace torch wrote as not JSON (a bare quote in a name): one more hostile input
        damaged.append(data[data.index(b"[", data.index(b'"traceEvents"')):data.rindex(b"]") + 1])
assert len(arrays) >= 5 and len(damaged) == 1, (len(arrays), len(damaged))
assert all(scan(d) is None for d in damaged), "a traceEvents array that is not JSON taken"
whole = sum(scan(a) is not None for a in arrays)
x = (b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.5,"dur":2,"args":{"device":0,"stream":7,'
     b'"correlation":9,"grid":[1,2,3],"Input Dims":[[1]],"flops":1e3,"Call stack":null,"labels":"a"}}')
meta = b'{"ph":"M","name":"process_name","pid":0,"args":{"name":"python"}}'
piece = b"[" + x + b"," + meta + b"]"
assert scan(piece) is not None, "the plain piece declined"
assert not any(scan(piece[:i]) for i in range(len(piece))), "a piece cut short taken"  # cut at every token
args40 = b",".join(b'"a%d":%d' % (i, i) for i in range(40))  # past the 32 args kept: read again from the text
edge = {b"": 0, b"[": 0, b"]": 0, b"[]": 1, b"[ ]": 1, b"[{}]": 1, b"[1]": 0, b'[{"ph":"X","ph":"X"}]': 0,
        b'[{"p\\u0068":"X"}]': 0, b'[{"a":' + b"[" * 63 + b"]" * 63 + b"}]": 1, b'[{"a":' + b"[" * 64 + b"]" * 64 + b"}]": 0,
        b'[{"a":' + b"[" * 100000 + b"]": 0, b'[{"ph":"X","name":"' + b"x" * 10000000 + b'"}]': 1,
        b'[{"ph":"X","ts":' + b"9" * 5000 + b"}]": 0, b'[{"ph":"X","ts":1.' + b"9" * 58 + b"}]": 0,
        b'[{"ph":"X","ts":1.' + b"9" * 57 + b"}]": 1, b'[{"ph":"X","ts":1e400,"dur":-0}]': 0,
        b'[{"ph":"X","ts":9007199254740993}]': 0, b'[{"ph":"X","ts":9007199254740992,"dur":-9007199254740992}]': 1,
        b'[{"ph":"X","pid":-9223372036854775808,"tid":9223372036854775807}]': 1, b'[{"ph":"X","pid":9223372036854775808}]': 0,
        b'[{"ph":"X","args":{"External id":-9223372036854775808}}]': 0, b'[{"ph":"X","args":{"grid":{"a":1}}}]': 0,
        b'[{"ph":"X","args":{%s,"device":1}}]' % args40: 1, b'[{"ph":"X","args":{%s,"device":1,"device":2}}]' % args40: 0,
        b'[{"ph":"i","name":"\xf0\x9f\x98\x80"}]': 1, b'[{"ph":"i","name":"\xf0\x9f\x98"}]': 0,
        b'[{"ph":"i","name":"\xed\xa0\x80"}]': 0, b'[{"ph":"i","name":"\xc0\x80"}]': 0, b'[{"ph":"i","name":"\\ud800"}]': 0,
        b'[{"ph":"i","name":"\\u00e9\\u12"}]': 0, b'[{"ph":"f","cat":7}]': 0, b'[{"ph":"\\u0058"}]': 0,
        b'[{"ph":null}]': 0, b"[" + meta + b"," + meta + b"]": 1, b"[" + meta + meta + b"]": 0,
        # exponents of 10+ digits (an int overflow in _cells.c once): past a double, declined; under one, 0.0
        b'[{"ph":"X","ts":1e' + b"9" * 12 + b"}]": 0, b'[{"ph":"X","ts":1e-' + b"9" * 12 + b',"dur":-1E+2147483648}]': 0,
        b'[{"ph":"X","ts":1e-' + b"9" * 12 + b',"args":{"flops":2.5E-2147483649}}]': 1}
wrong = [e[:80] for e, want in edge.items() if (scan(e) is not None) != want]
assert not wrong, wrong  # each edge taken or declined as kineto_scan.c's rules say
rng = random.Random(20261205)
base = max(arrays, key=len)
base = base[:base.index(b"},", 60000) + 1] + b"]"  # a real piece of some hundreds of events
assert scan(base) is not None, "the real piece declined"
alphabet = b'{}[]",:\\/0123456789.-+eEtrufalsnXfiIM \x00\x1f\x7f\x80\xbf\xc2\xe0\xed\xf0\xf4\xff'
taken = sum(scan(b) is not None for b in edits(base, alphabet, rng))
print("whole:", whole, "taken:", taken)
'''


def test_the_kineto_scanner_reads_hostile_bytes_without_a_sanitizer_report(tmp_path):
    """kineto_scan.c: every fixture trace's whole traceEvents array, a real piece cut at every byte, the
    edges of its rules (repeated and escaped keys, nesting at and past 64, ints and floats at and past their
    limits, args past the 32 kept, bad UTF-8, \\u escapes cut short), 5,000 random edits of a real piece, and the
    array of the trace torch wrote with a bare quote in a name (declined)."""
    traces = [str(p) for p in sorted(fixture_path("kineto").rglob("*.pt.trace.json.gz"))]
    assert traces
    out = _run_sanitized(tmp_path, "kineto_scan", KINETO_SCAN_CHILD, traces)
    whole, taken = (int(x) for x in out.split("whole:")[1].split("taken:"))
    # the accepting paths ran to their end on every trace torch wrote as JSON (all but the one with a bare quote)
    assert whole == len(traces) - 1 and taken > 500


TREE_CHILD = r'''
import random, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import _tree

I64 = np.iinfo(np.int64)


def nest(start, end):  # exact-size arrays: a read or write past an end is past a buffer
    start, end = np.array(start, np.int64), np.array(end, np.int64)
    depth, parent = np.empty(len(start), np.int64), np.empty(len(start), np.int64)
    _tree.nest_sorted(start, end, depth, parent)
    return depth, parent


def refused(fn, *args):
    try:
        fn(*args)
    except ValueError:
        return True
    return False


nest([], [])
n = 200000
depth, _ = nest(range(n), [2 * n - i for i in range(n)])  # each inside the last: 200,000 deep, the heap full
assert depth[-1] == n - 1
nest([0] * n, [I64.max] * n)
nest([I64.min, I64.min, 0, I64.max], [I64.max, I64.min, I64.max, I64.min])
rng = random.Random(20261205)
for _ in range(300):  # starts in any order and ends anywhere: memory-safe whatever the order
    k = rng.randint(1, 2000)
    d, p = nest([rng.randrange(-50, 50) for _ in range(k)], [rng.randrange(-50, 100) for _ in range(k)])
    assert (d >= 0).all() and (d <= np.arange(k)).all() and (p < np.arange(k)).all()
a8, a7 = np.zeros(8, np.int64), np.zeros(7, np.int64)
assert refused(_tree.nest_sorted, a8, a8, a8, a7) and refused(_tree.nest_sorted, b"\0" * 9, b"\0" * 9, bytearray(9), bytearray(9))


def sum_up(column, parent, by_depth, bounds, kind):
    column = np.array(column, np.float64 if kind == "d" else np.int64)
    _tree.sum_up(column, np.array(parent, np.int64), np.array(by_depth, np.int64), np.array(bounds, np.int64), kind)
    return column


def add_at(column, parent, by_depth, bounds):  # common.sum_up_tree's numpy path: np.add.at level by level
    column, parent, by_depth = column.copy(), np.asarray(parent), np.asarray(by_depth)
    for level in range(len(bounds) - 2, 0, -1):
        nodes = by_depth[bounds[level]:bounds[level + 1]]
        nodes = nodes[(nodes >= 0) & (parent[np.maximum(nodes, 0)] >= 0)]
        np.add.at(column, parent[nodes], column[nodes])
    return column


# the fuzzer's find (fuzz-out/tree_sum crash-d26c1f39...): 5534022346647487042 + 5534022346647487042 summed up
# into a parent overflowed int64, undefined in C; it wraps now, to np.add.at's answer
big = 5534022346647487042
got = sum_up([big, big], [-1, 0], [0, 1], [0, 1, 2], "q")
assert got.tolist() == [2 * big - 2 ** 64, big], got
got = sum_up([I64.max, 1, I64.min, -1], [-1, 0, -1, 2], [0, 2, 1, 3], [0, 2, 4], "q")
assert got.tolist() == [I64.min, 1, I64.max, -1], got
sum_up([], [], [], [0], "d")
assert refused(sum_up, [], [], [], [], "d")  # no level bounds at all
assert refused(sum_up, [1, 2], [-1, 2], [0, 1], [0, 1, 2], "q")  # a parent past the end
assert refused(sum_up, [1, 2], [-1, 0], [0, -2], [0, 1, 2], "q")  # a node before the start
assert refused(sum_up, [1, 2], [-1, 0], [0, 1], [0, 2, 1], "q")  # bounds that fall
assert refused(sum_up, [1, 2], [-1, 0], [0, 1], [0, 1, 3], "q")  # a bound past the end
assert refused(sum_up, [1, 2], [-1, 0], [0, 1], [0, 1, 2], "f")  # no such kind
assert refused(_tree.sum_up, np.zeros(3), np.zeros(2, np.int64), np.zeros(2, np.int64), np.zeros(2, np.int64), "d")
trees = 0
for _ in range(300):  # random trees, int64 values anywhere: the sums are np.add.at's, wrapped alike
    k = rng.randint(1, 500)
    parent = [-1] + [rng.randrange(-1, i) for i in range(1, k)]
    depth = [0] * k
    for i in range(1, k):
        depth[i] = depth[parent[i]] + 1 if parent[i] >= 0 else 0
    by_depth = sorted(range(k), key=lambda i: depth[i])
    bounds = np.searchsorted(np.sort(depth), np.arange(max(depth) + 2)).tolist()
    kind = rng.choice("dq")
    values = ([rng.uniform(-1e300, 1e300) for _ in range(k)] if kind == "d"
              else [rng.randint(I64.min, I64.max) for _ in range(k)])
    column = np.array(values, np.float64 if kind == "d" else np.int64)
    got = sum_up(column, parent, by_depth, bounds, kind)
    assert np.array_equal(got, add_at(column, parent, by_depth, bounds)), "sums differ from np.add.at"
    trees += 1
print("trees:", trees)
'''


def test_the_tree_sweeps_run_without_a_sanitizer_report(tmp_path):
    """tree.c: nest_sorted on no rows, a chain 200,000 deep, int64's extremes and 300 random orders, buffers of
    different lengths refused; sum_up at the fuzzer's int64 overflow (now wrapping, as np.add.at does), its
    refusals, and 300 random trees equal to np.add.at's sums."""
    assert int(_run_sanitized(tmp_path, "tree", TREE_CHILD, []).split("trees:")[1]) == 300
