"""_ProfInterface and the action controller (FAKE, see the package docstring).

The device is checked when a profile is built. init_trace makes the window's folder (FRAMEWORK/ and
PROF_*/, the raw data); finalize_trace writes profiler_info[_{rank}].json; analyse() re-creates
ASCEND_PROFILER_OUTPUT from a real recording, taking time (in a background thread with async_mode).
"""
import json
import os
import random
import shutil
import string
import threading
import time

import torch

from torch_npu import VERSION
from torch_npu.npu import _lazy_init

from ._config import _ExperimentalConfig, print_error_msg, print_warn_msg, supported_activities
from ._path_creator import ProfPathCreator
from .scheduler import ProfilerAction

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"


class _ProfInterface:
    def __init__(self, activities=None, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None, schedule=None, metadata=None):
        self.prof_path = ""
        self.activities = set(activities) if activities else supported_activities()
        self.settings = {"record_shapes": record_shapes, "profile_memory": profile_memory,
                         "with_stack": with_stack, "with_flops": with_flops, "with_modules": with_modules}
        for key, value in self.settings.items():
            if not isinstance(value, bool):
                print_warn_msg(f"Parameter {key} is of boolean type, reset it to False.")
                self.settings[key] = False
        if experimental_config is not None and not isinstance(experimental_config, _ExperimentalConfig):
            print_warn_msg("Parameter experimental_config is an instance of _ExperimentalConfig, reset it to default.")
            experimental_config = None
        self.experimental_config = experimental_config or _ExperimentalConfig()
        self.schedule = schedule
        self.metadata = metadata
        _lazy_init()

    def __getattr__(self, name):  # record_shapes, ... as attributes, as the real one has them
        settings = self.__dict__.get("settings", {})
        if name in settings:
            return settings[name]
        raise AttributeError(name)

    def init_trace(self):
        ProfPathCreator().create_prof_dir()
        self.prof_path = ProfPathCreator().get_prof_dir()
        os.makedirs(os.path.join(self.prof_path, "FRAMEWORK"))
        suffix = "".join(random.choices(string.ascii_uppercase, k=8))
        os.makedirs(os.path.join(self.prof_path, f"PROF_000001_{time.strftime('%Y%m%d%H%M%S')}000_{suffix}", "host"))

    def warmup_trace(self):
        pass

    def start_trace(self):
        self._start_ns = time.time_ns()

    def stop_trace(self):
        pass

    def finalize_trace(self):
        rank = torch.distributed.get_rank() if torch.distributed.is_available() and \
            torch.distributed.is_initialized() else None
        info = {"config": {"common_config": {"activities": sorted(str(a) for a in self.activities),
                                             "schedule": getattr(self.schedule, "__dict__", None), **self.settings},
                           "experimental_config": self.experimental_config.__dict__},
                "end_info": {"collectionTimeEnd": time.time_ns(), "MonotonicTimeEnd": time.monotonic_ns()}}
        name = "profiler_info.json" if rank is None else f"profiler_info_{rank}.json"
        if rank is not None:
            info["rank_id"] = rank
        with open(os.path.join(self.prof_path, name), "w") as f:
            json.dump(info, f, indent=4)  # a schedule whose __dict__ is not JSON fails here, as in torch_npu

    def delete_prof_dir(self):
        ProfPathCreator().delete_prof_dir()

    def analyse(self, analysis_type="tensorboard", output_path=None, **kwargs):
        try:
            _analyse(self.prof_path, analysis_type, output_path, kwargs.get("async_mode", False))
        except Exception:  # noqa: BLE001  the behaviour being imitated: a print, no exception
            print_warn_msg("Profiling data parsing failed.")


def _fixture_rank_folder() -> str:
    root = os.environ["NPU_DOUBLE_FIXTURE"]
    folders = sorted(d for d in os.listdir(root) if d.endswith("_ascend_pt"))
    rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else int(os.environ.get("RANK", 0))
    return os.path.join(root, folders[rank % len(folders)])


def _analyse(prof_path, analysis_type, output_path, async_mode):
    import multiprocessing
    if multiprocessing.current_process().daemon:
        print_error_msg("The profiling data cannot be parsed during the daemon process, it is recommended that "
                        "you use an offline parsing interface to parse the collected data.")
        return
    source = os.path.join(_fixture_rank_folder(), OUTPUT_DIR)
    if analysis_type == "export_chrome_trace":
        _pause(1)
        shutil.copyfile(os.path.join(source, "trace_view.json"), output_path)  # a bare array, as trace_view.json
        return
    out = os.path.join(prof_path, OUTPUT_DIR)
    shutil.rmtree(out, ignore_errors=True)  # the parser wipes and re-creates it before parsing
    os.makedirs(out)
    if async_mode and VERSION != "2.1":
        threading.Thread(target=_fill, args=(source, out), daemon=True).start()
    else:
        _fill(source, out)


def _fill(source, out):
    _wait_gate()
    names = sorted(os.listdir(source))
    for name in names:
        _pause(len(names))
        shutil.copyfile(os.path.join(source, name), os.path.join(out, name))
    if VERSION != "2.1":
        open(os.path.join(out, "analyse.done"), "w").close()


def _wait_gate():
    """Test hook, not torch_npu's: with NPU_DOUBLE_GATE=<path> the analysis starts once that file exists
    (at most 60 s later), so a test decides on events whether training waited for it, not on a clock."""
    gate = os.environ.get("NPU_DOUBLE_GATE")
    deadline = time.monotonic() + 60
    while gate and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.05)


def _pause(parts: int):
    time.sleep(float(os.environ.get("NPU_DOUBLE_PARSE_S", "0.3")) / max(parts, 1))


class ProfActionController:
    """What each schedule transition does, keyed by torch_npu's OWN ProfilerAction."""

    def __init__(self, prof, prof_inst, on_trace_ready=None):
        self.prof, self.on_trace_ready = prof, on_trace_ready
        p, none, warm, rec, save = prof_inst, ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD, \
            ProfilerAction.RECORD_AND_SAVE
        finish = [p.stop_trace, p.finalize_trace, self._trace_ready]
        self.action_map = {
            (none, warm): [p.init_trace, p.warmup_trace], (none, rec): [p.init_trace, p.start_trace],
            (none, save): [p.init_trace, p.start_trace],
            (warm, none): [_warn("Incorrect schedule: WARMUP followed by NONE"), p.start_trace, p.stop_trace,
                           p.finalize_trace],
            (warm, rec): [p.start_trace], (warm, save): [p.start_trace],
            (rec, none): [_warn("Incorrect schedule: RECORD followed by NONE"), p.stop_trace, p.finalize_trace],
            (rec, warm): [_warn("Incorrect schedule: RECORD followed by WARMUP"), p.stop_trace, p.finalize_trace],
            (save, none): finish, (save, warm): finish + [p.init_trace, p.warmup_trace],
            (save, rec): finish + [p.init_trace, p.start_trace], (save, save): finish + [p.init_trace, p.start_trace],
            (warm, None): [_warn("Incorrect schedule: Stop profiler while current state is WARMUP which will result "
                                 "in empty parsed data."), p.finalize_trace, p.delete_prof_dir],
            (rec, None): [_warn("Incorrect schedule: Stop profiler while current state is RECORD which may result "
                                "in incomplete parsed data."), p.stop_trace, p.finalize_trace, self._trace_ready],
            (save, None): [_warn("Stop profiler while current state is RECORD_AND_SAVE, perhaps the scheduling "
                                 "cycle has not yet completed."), p.stop_trace, p.finalize_trace, self._trace_ready],
        }

    def transit_action(self, prev_action, current_action):
        for action in self.action_map.get((prev_action, current_action), []):
            action()

    def _trace_ready(self):
        if self.on_trace_ready:
            self.on_trace_ready(self.prof)


def _warn(message):
    return lambda: print_warn_msg(message)
