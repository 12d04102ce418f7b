"""Our NPU matmul FLOPs against msprof-analyze's own model (its operator MFU's MatmulFLOPs), run in
the peer venv on a copy of the db fixture (tests/peers/msprof_matmul_flops.py): the same FLOPs per
kernel name, for every MatMulV2 / MatMulV3 kernel the db holds."""
import json
import shutil

import pytest

from conftest import fixture_path
from test_peer_oracles import _run_peer

from canning_tb.analysis.build import build_digest
from canning_tb.ingest.ascend import read_ascend

pytestmark = [pytest.mark.slow, pytest.mark.peer_oracle]  # a peer tool's venv, as the other peer oracles


def test_npu_matmul_flops_equal_msprof_analyze(tmp_path):
    folder = fixture_path("ascend", "db_level2", "rank0_ascend_pt")
    db = tmp_path / "profiler.db"  # msprof-analyze opens the db itself: a copy
    shutil.copy(folder / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db", db)
    _run_peer("msprof_matmul_flops.py", db, tmp_path / "flops.json", timeout=120)
    theirs = json.loads((tmp_path / "flops.json").read_text())
    assert len(theirs) == 3  # aclnnAddmm MatMulV2, aclnnMm MatMulV2, aclnnMm MatMulV3
    ours = {k.name: k.work.flops for k in build_digest(read_ascend(str(folder))).kernels_by_name if k.name in theirs}
    assert ours == {name: float(flops) for name, flops in theirs.items()}
