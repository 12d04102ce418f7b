"""The NPU window, as torch_npu really writes it.

torch_npu makes `{worker}[_{pid}]_{ts}_ascend_pt/` at the START of a window (FRAMEWORK/, PROF_*/) and
keeps its exact path in `prof.prof_if.prof_path`; its own `tensorboard_trace_handler` then analyses
that folder into ASCEND_PROFILER_OUTPUT/ (blocking, in the background with async_mode, or not at all
with analyse_flag=False). The folder it writes into is process-wide (canning_tb.collect.npu): our
handler re-points it at its own run folder whenever a Profile starts.
"""
from __future__ import annotations

import inspect
import logging
import os

from canning_tb.util.manifest import ASCEND_OUTPUT

log = logging.getLogger(__name__)


def handler_accepts(keyword: str) -> bool:
    """Whether this torch_npu's tensorboard_trace_handler takes the keyword (no async_mode on 2.1 / 6.0.0)."""
    import torch_npu.profiler  # lazy: only on Ascend machines
    return keyword in inspect.signature(torch_npu.profiler.tensorboard_trace_handler).parameters


def make_torch_npu_handler(dir_name: str, worker: str, analyse_flag: bool, async_mode: bool):
    """torch_npu's handler for this run folder; keywords its version lacks are dropped with a warning."""
    import torch_npu.profiler  # lazy: only on Ascend machines
    factory = torch_npu.profiler.tensorboard_trace_handler
    accepted = set(inspect.signature(factory).parameters)
    wanted = {"analyse_flag": analyse_flag, "async_mode": async_mode}
    defaults = {"analyse_flag": True, "async_mode": False}
    kwargs = {}
    for key, value in wanted.items():
        if key in accepted:
            kwargs[key] = value
        elif value != defaults[key]:
            log.warning("canning: this torch_npu's tensorboard_trace_handler has no %s; %s=%r is ignored "
                        "(torch_npu analyses each window while training waits)", key, key, value)
    return factory(dir_name, worker, **kwargs)


def backend_profiler(prof):
    """torch_npu's own profile object (its handler calls prof.prof_if.analyse)."""
    inner = getattr(prof, "profiler", None)
    return inner if inner is not None and getattr(prof, "backend", None) == "torch_npu" else prof


def is_npu(prof) -> bool:
    if getattr(prof, "backend", None) == "torch_npu":
        return True
    return type(prof).__module__.startswith("torch_npu")


def window_folder(prof, dir_name: str) -> str:
    """The exact folder torch_npu made for the window that just ended (prof_if.prof_path)."""
    inner = backend_profiler(prof)
    path = getattr(getattr(inner, "prof_if", None), "prof_path", None)
    if not path or not os.path.isdir(path):
        raise OSError(f"torch_npu reports no folder for this window (prof_if.prof_path={path!r})")
    if os.path.realpath(os.path.dirname(path)) != os.path.realpath(dir_name):
        raise OSError(f"torch_npu wrote this window into {os.path.dirname(path)!r}, not into {dir_name!r}: its "
                      f"output folder is process-wide and another tensorboard_trace_handler changed it; use one "
                      f"handler per process")
    return path


def analysis_outcome(folder: str, analyse_flag: bool, async_mode: bool, async_supported: bool) -> str:
    """What the manifest says of torch_npu's analysis of this window (see canning_tb.util.manifest)."""
    if not analyse_flag:
        return "off"
    if async_mode and async_supported:
        return "async"
    out = os.path.join(folder, ASCEND_OUTPUT)
    if os.path.isdir(out) and any(not n.startswith(".") for n in os.listdir(out)):
        return "sync"
    log.warning("canning: torch_npu did not analyse %s (a daemon process, or its analysis failed: see its "
                "messages above); parse it later with torch_npu.profiler.profiler.analyse(%r)", folder, folder)
    return "skipped"
