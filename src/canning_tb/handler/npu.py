"""The NPU window: torch_npu's own handler writes <worker>_<pid>_<ts>_ascend_pt/; we find the folder it made."""
import os

SUFFIXES = ("_ascend_pt", "_ascend_ms")


def torch_npu_handler(dir_name: str, worker: str):
    import torch_npu.profiler  # lazy: only on Ascend machines
    return torch_npu.profiler.tensorboard_trace_handler(dir_name, worker)


def backend_profiler(prof):
    """torch_npu's handler needs its own profile object (it calls prof.prof_if.analyse)."""
    inner = getattr(prof, "profiler", None)
    return inner if inner is not None and getattr(prof, "backend", None) == "torch_npu" else prof


def is_npu(prof) -> bool:
    if getattr(prof, "backend", None) == "torch_npu":
        return True
    return type(prof).__module__.startswith("torch_npu")


def ascend_folders(dir_name: str) -> dict:
    """{name: mtime_ns} of the *_ascend_pt folders in dir_name."""
    out = {}
    try:
        with os.scandir(dir_name) as it:
            for e in it:
                if e.name.endswith(SUFFIXES) and e.is_dir():
                    out[e.name] = e.stat().st_mtime_ns
    except OSError:
        pass
    return out


def new_folder(before: dict, after: dict):
    """The folder this call produced: a name not seen before, else the most recently modified one."""
    fresh = [n for n in after if n not in before]
    pool = fresh or [n for n in after if after[n] != before.get(n)] or list(after)
    return max(pool, key=lambda n: (after[n], n)) if pool else None
