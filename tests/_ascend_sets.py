"""Multi-rank torch_npu sets made from the real level1 ranks, as other clusters write them.

The fixtures hold two ranks of one data-parallel communicator whose numbering inside the
communicator is the global one. Real jobs are bigger: pipeline and data-parallel groups, each
communicator numbering its members 0..n-1 in communication_matrix.json, groups named by the hash
of their HCCL communicator name. `pipeline_set` builds a 4-rank PP=2 x DP=2 set from the two real
ranks (every number in it is a number of the real files, moved to where that job would write it):

- global ranks 0..3; dp groups {0, 2} and {1, 3}, pp groups {0, 1} and {2, 3}; ranks 0 and 2 are
  copies of level1 rank 0, ranks 1 and 3 of level1 rank 1;
- each group's HCCL id in communication(_matrix).json is msprof-analyze's hash of its communicator
  name (torch_npu's profiler_metadata.json `parallel_group_info` keys: the comm name);
- the real all-reduce calls 0..2 stay all-reduces of the rank's dp group; call 3 becomes the pipeline
  send (first stage) / receive (last stage) of the rank's pp group, in every file that names it;
- communication_matrix.json: the real links between ranks 0 and 1 of each cell set, renumbered
  inside the rank's dp group (rank 2 is member 1 of {0, 2}: its link to rank 0 is "1-0"); the send
  gets the real 0-1 HCCS link of the "-total" set, numbered inside the pp group;
- `metadata=False`: no parallel_group_info (groups only from the names in communication.json);
- `no_trace`: ranks whose trace_view.json is removed (no host events, steps from step_trace_time.csv).

`only_step_and_kernels(folder)` strips a rank to step_trace_time.csv and kernel_details.csv;
`sample_kernels(folder, n)` keeps n compute rows of kernel_details.csv (and every HCCL row).
"""
from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

from conftest import fixture_path

OUT = "ASCEND_PROFILER_OUTPUT"
DP = {"dp0": [0, 2], "dp1": [1, 3]}
PP = {"pp0": [0, 1], "pp1": [2, 3]}
COMM_NAME = {g: f"10.0.0.1%enp189s0f0_60000_{i}_1736408880000000" for i, g in enumerate(("dp0", "dp1", "pp0", "pp1"))}
LAST = "hcom_allReduce__586_3_1"  # the real call that becomes the pipeline send / receive


def double_hash(text: str) -> int:
    """msprof-analyze's group id of a communicator name: two 32-bit polynomial hashes (29, 131) side by side."""
    a = b = 0
    for ch in text:
        a = (a * 29 + ord(ch)) & 0xFFFFFFFF
        b = (b * 131 + ord(ch)) & 0xFFFFFFFF
    return (a << 32) | b


def group_id(group: str) -> str:
    return str(double_hash(COMM_NAME[group]))


def groups_of(rank: int) -> tuple[str, str]:
    dp = next(g for g, m in DP.items() if rank in m)
    pp = next(g for g, m in PP.items() if rank in m)
    return dp, pp


def op_names(rank: int) -> dict[str, str]:
    """The real op names -> this rank's (the tag after `__` is the end of the group id, as HCCL writes it)."""
    dp, pp = groups_of(rank)
    out = {f"hcom_allReduce__586_{i}_1": f"hcom_allReduce__{group_id(dp)[-3:]}_{i}_1" for i in range(3)}
    first_stage = PP[pp].index(rank) == 0
    out[LAST] = f"hcom_{'send' if first_stage else 'receive'}__{group_id(pp)[-3:]}_0_1"
    return out


def _writable(d: Path) -> None:
    for p in [d, *d.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)


def _rename_text(path: Path, names: dict[str, str]) -> None:
    text = path.read_text()
    for old, new in names.items():
        text = text.replace(old, new)
    path.write_text(text)


def _communication(path: Path, rank: int, names: dict[str, str]) -> None:
    dp, pp = groups_of(rank)
    raw = json.loads(path.read_text())
    out = {}
    for step, kinds in raw.items():
        coll, p2p = {}, {}
        for key, info in kinds["collective"].items():
            op = key.split("@")[0]
            if op not in names:
                continue  # "Total Op Info": CANN's sum, left out (msprof-analyze and our reader skip it)
            (p2p if op == LAST else coll)[f"{names[op]}@{group_id(pp if op == LAST else dp)}"] = info
        out[step] = {"p2p": p2p, "collective": coll}
    path.write_text(json.dumps(out, indent=1))


def _matrix(path: Path, rank: int, source_rank: int, names: dict[str, str]) -> None:
    dp, pp = groups_of(rank)
    me, other = DP[dp].index(rank), 1 - DP[dp].index(rank)
    raw = json.loads(path.read_text())
    out = {}
    for step, kinds in raw.items():
        coll, p2p = {}, {}
        for key, links in kinds["collective"].items():
            cells = {}
            for pair, v in links.items():
                src, dst = (int(x) for x in pair.split("-"))
                if src != source_rank or dst not in (0, 1):
                    continue  # links to ranks this job does not have
                v = dict(v, **{"Op Name": names.get(v.get("Op Name"), v.get("Op Name"))})
                cells[f"{me}-{me if dst == src else other}"] = v
            coll[f"{key.split('@')[0]}@{group_id(dp)}"] = cells
            if key.startswith("allreduce-total") and PP[pp].index(rank) == 0:
                link = dict(links[f"{source_rank}-{1 - source_rank}"], **{"Op Name": names[LAST]})
                p2p[f"send-total@{group_id(pp)}"] = {"0-1": link}
        out[step] = {"p2p": p2p, "collective": coll}
    path.write_text(json.dumps(out, indent=1))


def _info(d: Path, rank: int, metadata: bool, world: bool) -> None:
    (info,) = d.glob("profiler_info*.json")
    j = json.loads(info.read_text())
    j["rank_id"] = rank
    info.unlink()
    (d / f"profiler_info_{rank}.json").write_text(json.dumps(j, indent=1))
    md = json.loads((d / "profiler_metadata.json").read_text())
    if metadata:
        md["parallel_group_info"] = {COMM_NAME[g]: {"group_name": g[:2], "group_rank": m.index(rank),
                                                    "global_ranks": m}
                                     for g, m in {**DP, **PP}.items() if rank in m}
    if world:
        md["distributed_args"] = {"world_size": 4, "rank": rank, "pipeline_model_parallel_size": 2}
    (d / "profiler_metadata.json").write_text(json.dumps(md, indent=1))


def pipeline_set(root: Path, metadata: bool = True, world: bool = False, no_trace: tuple = ()) -> Path:
    """The 4-rank set (module doc) under root/run; returns the run folder."""
    run = root / "run"
    for rank in range(4):
        d = run / f"rank{rank}_ascend_pt"
        shutil.copytree(fixture_path("ascend", "level1", f"rank{rank % 2}_ascend_pt"), d)
        _writable(d)
        names = op_names(rank)
        out = d / OUT
        for f in ("trace_view.json", "kernel_details.csv"):
            _rename_text(out / f, names)
        _communication(out / "communication.json", rank, names)
        _matrix(out / "communication_matrix.json", rank, rank % 2, names)
        _info(d, rank, metadata, world)
        if rank in no_trace:
            (out / "trace_view.json").unlink()
    return run


def only_step_and_kernels(folder: Path) -> None:
    """Leave a rank with step_trace_time.csv and kernel_details.csv (and its profiler_info)."""
    for p in (folder / OUT).iterdir():
        if p.name not in ("step_trace_time.csv", "kernel_details.csv"):
            p.unlink()
    meta = folder / "profiler_metadata.json"
    if meta.exists():
        meta.unlink()


def sample_kernels(folder: Path, keep: int) -> None:
    """kernel_details.csv with only its first `keep` compute rows (every HCCL row kept)."""
    path = folder / OUT / "kernel_details.csv"
    rows = list(csv.reader(io.StringIO(path.read_text(), newline="")))
    core = rows[0].index("Accelerator Core")
    compute = [r for r in rows[1:] if r[core] not in ("HCCL", "COMMUNICATION")]
    chosen = set(map(id, compute[:keep]))
    kept = [rows[0]] + [r for r in rows[1:] if id(r) in chosen or r[core] in ("HCCL", "COMMUNICATION")]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(kept)
    path.write_text(out.getvalue())
