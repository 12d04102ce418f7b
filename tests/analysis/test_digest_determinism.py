"""The same files give the same digest, byte for byte, in any process: Python's string hashing differs
from process to process (PYTHONHASHSEED), so anything that orders rows by a set's or a map's iteration
shows here (the NPU pipes of equal share came out in either order before). Real fixtures, two fresh
interpreters each."""
import hashlib
import os
import subprocess
import sys

import pytest

from conftest import fixture_path

SCRIPT = """
import hashlib, sys
from canning_tb.analysis.build import build_digest
from canning_tb.ingest.ascend.read import read_ascend
from canning_tb.ingest.kineto.read import read_kineto
path = sys.argv[1]
table = read_ascend(path) if path.endswith("_ascend_pt") else read_kineto(path)
print(hashlib.sha256(build_digest(table).SerializeToString(deterministic=True)).hexdigest())
"""


@pytest.mark.parametrize("parts", [("ascend", "level2", "rank1_ascend_pt"), ("ascend", "level1", "rank0_ascend_pt"),
                                   ("hta", "cpu_only")])
def test_the_digest_does_not_depend_on_the_process(parts):
    path = fixture_path(*parts)
    if parts[0] == "hta":
        path = next(p for p in path.iterdir() if ".json" in p.name)
    seen = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], env=env, capture_output=True, text=True,
                             check=True)
        seen.add(out.stdout.strip())
    assert len(seen) == 1 and len(next(iter(seen))) == 64
