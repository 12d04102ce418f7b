"""Who wrote a torch_npu window: ``profiler_info[_{rank}].json`` and ``profiler_metadata.json``.

Shared by the text and the SQLite readers (the db keeps the metadata in its META_DATA table).
The rank comes from the files, never from a folder name: ``rank_id`` inside profiler_info, else
the N of ``profiler_info_N.json`` (msprof-analyze's rule), else ``distributed_args.rank`` of the
metadata; the world size from ``distributed_args.world_size``, else the largest global rank of
the communicators in ``parallel_group_info``.
"""
from __future__ import annotations

import glob
import json
import os
import re
from typing import Any

from canning_tb.ingest import side_tables as side
from canning_tb.ingest.table import NONE, EventTable, Meta

from .csv.rows import to_float, to_int
from .tables import read_json_dict

INFO_RE = re.compile(r"^profiler_info(?:_(\d+))?\.json$")
_WORKER_RE = re.compile(r"^(.*?)(?:_(\d+(?:\.\d+)?))?_ascend_(?:pt|ms)$")


def worker_of(base: str) -> str:
    """The worker name torch_npu put before ``[_pid]_<timestamp>_ascend_pt``; else the name itself."""
    m = _WORKER_RE.match(base)
    return m.group(1) if m and m.group(1) else base


def info_files(folder: str) -> list[str]:
    return sorted(p for p in glob.glob(os.path.join(glob.escape(folder), "profiler_info*.json"))
                  if INFO_RE.match(os.path.basename(p)))


def _flatten(prefix: str, v: Any, out: dict[str, str]) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            _flatten(f"{prefix}.{str(k).lstrip('_')}" if prefix else str(k).lstrip("_"), x, out)
    elif isinstance(v, (list, tuple)):
        out[prefix] = ",".join(str(x) for x in v)
    else:
        out[prefix] = "" if v is None else str(v)


def _window_times(info: dict, meta: Meta) -> None:
    end = info.get("end_info") or {}
    start = info.get("start_info") or {}
    end_ns = to_int(end.get("collectionTimeEnd"))
    if end_ns is None:
        return
    meta.end_ns = end_ns
    begin = to_int(start.get("collectionTimeBegin"))
    if begin is None:
        m0, m1 = to_int(start.get("start_monotonic")), to_int(end.get("MonotonicTimeEnd"))
        if m0 is not None and m1 is not None and m1 >= m0:
            begin = end_ns - (m1 - m0)
    if begin is not None:
        meta.start_ns = begin


def apply_info(info: dict, rank_from_name: int | None, meta: Meta) -> None:
    env = meta.environment
    rank = to_int(info.get("rank_id"))
    if rank is not None and rank >= 0:
        meta.rank = rank
    elif rank_from_name is not None:
        meta.rank = rank_from_name
    env["rank_source"] = "profiler_info"
    for k in ("torch_npu_version", "cann_version"):
        if info.get(k) is not None:
            env[k] = str(info[k])
    cfg: dict[str, str] = {}
    config = info.get("config") or {}
    # a config that is no map (a list, a number) is one setting, shown under its own name, not a bare "profiler."
    _flatten("" if isinstance(config, dict) else "config", config, cfg)
    for k, v in cfg.items():
        env["profiler." + k.replace("common_config.", "").replace("experimental_config.", "")] = v
    _window_times(info, meta)


def read_info(folder: str, table: EventTable, used: list[str]) -> None:
    """profiler_info and profiler_metadata of a window folder into table.meta (and comm_groups)."""
    base = os.path.basename(folder)
    infos = info_files(folder)
    if infos:
        path = infos[0]
        used.append(path)
        m = INFO_RE.match(os.path.basename(path))
        rank_from_name = int(m.group(1)) if m.group(1) else None
        info = read_json_dict(path, f"{base}/{os.path.basename(path)}", table.problems)
        if info:
            apply_info(info, rank_from_name, table.meta)
        elif rank_from_name is not None:
            table.meta.rank = rank_from_name
            table.meta.environment["rank_source"] = "profiler_info file name"
    meta_path = os.path.join(folder, "profiler_metadata.json")
    if os.path.isfile(meta_path):
        used.append(meta_path)
        md = read_json_dict(meta_path, f"{base}/profiler_metadata.json", table.problems)
        if md:
            apply_metadata(md, table)


def _groups(groups: dict, table: EventTable) -> int | None:
    """parallel_group_info -> comm_groups rows; the world size it implies (largest rank + 1)."""
    out, all_ranks = [], set()
    for comm_name, g in groups.items():
        if not isinstance(g, dict):
            continue
        ranks = [r for r in (to_int(x) for x in (g.get("global_ranks") or [])) if r is not None]
        all_ranks.update(ranks)
        out.append(side.row("comm_groups", group=str(comm_name), name=str(g.get("group_name") or comm_name),
                            rank_in_group=to_int(g.get("group_rank")), ranks=",".join(str(r) for r in ranks)))
    side.put(table.side, "comm_groups", out)
    if out:
        table.meta.environment["source.comm_groups"] = "profiler_metadata.json"
        table.meta.environment["parallel_groups"] = ",".join(
            f"{r['name']}:{len(r['ranks'].split(',')) if r['ranks'] else 0}" for r in out)
    return max(all_ranks) + 1 if all_ranks else None


def apply_metadata(md: dict, table: EventTable) -> None:
    meta, env = table.meta, table.meta.environment
    for k, v in (md.get("ENV_VARIABLES") or {}).items():
        env["env." + str(k)] = "" if v is None else str(v)
    dist = md.get("distributed_args") or {}
    world = None
    if isinstance(dist, dict):
        for k, v in dist.items():
            env["distributed." + str(k)] = str(v)
        world = to_int(dist.get("world_size"))
        rank = to_int(dist.get("rank"))
        if rank is not None and rank >= 0 and env.get("rank_source") is None:
            meta.rank = rank
            env["rank_source"] = "profiler_metadata"
    groups = md.get("parallel_group_info")
    if isinstance(groups, dict) and groups:
        implied = _groups(groups, table)
        world = world if world is not None else implied
    if world is not None and world > 0:
        meta.world_size = world
        env["world_size"] = str(world)
        declared = isinstance(dist, dict) and to_int(dist.get("world_size")) is not None
        env["world_size_source"] = "profiler_metadata" if declared else "parallel groups"
    for k, v in md.items():
        if k not in ("ENV_VARIABLES", "distributed_args", "parallel_group_info"):
            env["metadata." + str(k)] = v if isinstance(v, str) else json.dumps(v)[:4096]


DEVICE_INFO_RE = re.compile(r"^info\.json\.\d{1,3}$")


def read_device_info(root: str, table: EventTable, used: list[str]) -> None:
    """CANN's device info (``PROF_*/device_N/info.json.N``, where msprof writes it and msprof-analyze's
    operator MFU reads it): the AI Core count and clock the cube's peak follows from (analysis/
    efficiency/peaks.py). Kept in the environment until the devices are known (`device_facts`)."""
    try:
        profs = [e.path for e in os.scandir(root) if e.is_dir(follow_symlinks=False) and e.name.startswith("PROF_")]
    except OSError:
        return
    for prof in sorted(profs):
        for dev in sorted(glob.glob(os.path.join(glob.escape(prof), "device_*"))):
            for name in sorted(os.listdir(dev)) if os.path.isdir(dev) else []:
                if DEVICE_INFO_RE.match(name):
                    _one_device_info(os.path.join(dev, name), table, used)


def _one_device_info(path: str, table: EventTable, used: list[str]) -> None:
    info = read_json_dict(path, "/".join(path.split(os.sep)[-3:]), table.problems)
    devices = (info or {}).get("DeviceInfo")
    if not isinstance(devices, list) or not devices or not isinstance(devices[0], dict):
        return
    used.append(path)
    env = table.meta.environment
    cores, mhz = to_int(devices[0].get("ai_core_num")), to_float(devices[0].get("aic_frequency"))
    if cores and cores > 0:
        env["npu.ai_core_num"] = str(cores)
    if mhz and mhz > 0:
        env["npu.aic_frequency_mhz"] = str(mhz)


def device_facts(meta: Meta) -> None:
    """The device info read into the environment, onto each NPU device (its peaks follow from them)."""
    env = meta.environment
    for dev in meta.devices:
        if dev.get("kind") == "npu":
            for key in ("ai_core_num", "aic_frequency_mhz"):
                if f"npu.{key}" in env:
                    dev.setdefault(key, env[f"npu.{key}"])


def set_devices(meta: Meta, devs: set[int]) -> None:
    name = meta.environment.get("npu_name") or "Ascend"
    known = {d.get("index") for d in meta.devices}
    for d in sorted(devs):
        if d != NONE and d not in known:
            meta.devices.append({"kind": "npu", "index": d, "name": name})


def rank_from_data(table: EventTable) -> None:
    """What the files did not say, from the data: the world size from the ranks the communication
    matrix links (a lower bound: the job has at least those ranks); the rank, when no file named it,
    from the matrix's self link (src == dst: this rank's index in the group), mapped to a global
    rank through the group's ranks when known."""
    env = table.meta.environment
    linked = [x for link in side.rows(table.side, "comm_matrix") for x in (link["src"], link["dst"]) if x is not None]
    if "world_size" not in env and linked and max(linked) + 1 > table.meta.world_size:
        table.meta.world_size = max(linked) + 1
        env["world_size"] = str(table.meta.world_size)
        env["world_size_source"] = "communication_matrix ranks"
    if "world_size" not in env:  # no file says it: unknown, never 1 (level0 exports of a multi-card job say nothing)
        table.meta.world_size = -1
    if env.get("rank_source") is not None:
        return
    members = {g["group"]: g["ranks"].split(",") for g in side.rows(table.side, "comm_groups") if g["ranks"]}
    for link in side.rows(table.side, "comm_matrix"):
        if link["src"] is not None and link["src"] == link["dst"]:
            ranks = members.get(link["group"])
            local = link["src"]
            table.meta.rank = int(ranks[local]) if ranks and local < len(ranks) else local
            table.meta.environment["rank_source"] = "communication_matrix self link"
            return
