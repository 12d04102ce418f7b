"""msprof-analyze's own matmul FLOPs model (cluster_analyse/.../operator_mfu/operator_flops.py,
MatmulFLOPs) on a torch_npu profiler db's compute tasks; write {kernel name: summed FLOPs} as JSON.

Runs INSIDE the peer venv (.venv-peers), never in the project venv:
    .venv-peers/bin/python tests/peers/msprof_matmul_flops.py <profiler db> <out.json>

The kernels' shapes are read with msprof-analyze's own query (KernelShapeExport: COMPUTE_TASK_INFO
joined with TASK), quotes stripped as its MFUCalculator does; its operator_mfu recipe needs a
device info.json and mstx FLOPs ranges the fixtures do not have, so only its model runs here.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict

from msprof_analyze.cluster_analyse.cluster_kernels_analysis.operator_mfu.operator_flops import (
    OP_TYPE_MAP, MatmulFLOPs, OperatorType)
from msprof_analyze.prof_exports.mfu_export import KernelShapeExport


def main(db: str, out: str) -> int:
    df = KernelShapeExport(db, "").read_export_db()
    sums: dict[str, int] = defaultdict(int)
    for row in df.itertuples(index=False):
        if row.type not in OP_TYPE_MAP[OperatorType.MATMUL]:
            continue
        model = MatmulFLOPs(input_shapes=str(row.input_shapes).strip("\"'"), input_types=str(row.input_types),
                            output_shapes=str(row.output_shapes).strip("\"'"))
        sums[row.kernel_name] += int(model.calculate_flops())
    with open(out, "w") as f:
        json.dump(sums, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
