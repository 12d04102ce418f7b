"""A hand-written run for the MCP / HTTP answer tests: 2 ranks x 2 windows of tiny Kineto traces, every
time chosen here so a test can say which window, step or rank a figure came from. Window 1's steps are
3x window 0's, and rank 1 is slower than rank 0 in window 1 only; each step launches kernels named after
it (gemm_s<N>, add_s<N>) from aten::mm / aten::add, so a range or a window shows by name, and a copy_kernel
launched by a different operator in each step (kernels by operator: one row more than by name)."""
import json

V100 = {"id": 0, "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34079899648, "computeMajor": 7,
        "computeMinor": 0, "numSms": 80}
BASE_US = 1_700_000_000_000_000  # the traces' clock, µs
WINDOW_TS = ("1700000000100", "1700000000200")  # the file names' instants: window 0 then window 1
STEP_US = {(0, 0): 1000, (1, 0): 1000, (0, 1): 3000, (1, 1): 4000}  # (rank, window) -> each step's length
FIRST_STEP = {0: 5, 1: 20}  # window -> its first step's number (two steps each)
GEMM_US, ADD_US, COPY_US = 300, 100, 50  # each step's kernels


def events(rank: int, window: int) -> list:
    out, corr = [], 1
    start = BASE_US + window * 10_000_000
    length = STEP_US[(rank, window)]
    for i in range(2):
        n, ts = FIRST_STEP[window] + i, start + i * length
        out.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 10, "tid": 10,
                    "ts": ts, "dur": length, "args": {}})
        # copy_kernel is launched by aten::copy_ in the first step, by aten::to in the second: one name, two operators
        launches = (("aten::mm", f"gemm_s{n}", 100, GEMM_US), ("aten::add", f"add_s{n}", 500, ADD_US),
                    ("aten::copy_" if i == 0 else "aten::to", "copy_kernel", 700, COPY_US))
        for op, kernel, at, dur in launches:
            out.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 10, "tid": 10, "ts": ts + 10 + at // 10,
                        "dur": 20, "args": {"External id": corr}})
            out.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
                        "ts": ts + 12 + at // 10, "dur": 5, "args": {"correlation": corr, "External id": corr}})
            out.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": ts + at, "dur": dur,
                        "args": {"device": 0, "stream": 7, "correlation": corr, "External id": corr}})
            corr += 1
    return out


def write_run(folder) -> dict:
    """The run's traces under folder; {(rank, window): path}."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for rank in (0, 1):
        for window in (0, 1):
            doc = {"schemaVersion": 1, "deviceProperties": [V100],
                   "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
                   "traceEvents": events(rank, window)}
            path = folder / f"rank{rank}.{WINDOW_TS[window]}.pt.trace.json"
            path.write_text(json.dumps(doc))
            paths[(rank, window)] = path
    return paths
