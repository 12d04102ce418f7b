"""torch_npu.profiler.dynamic_profile (FAKE, see the package docstring): init, step, start.

Written from a reading of torch_npu's dynamic_profile.py and _dynamic_profiler/ (_dynamic_profiler_config_context.py,
_dynamic_profiler_monitor.py, _dynamic_profiler_monitor_shm.py, _dynamic_profiler_utils.py), 2.1 branch and 26.x:
- init(path) writes the template <path>/profiler_config.json when absent and logs to
  <path>/log/dp_<host>_<pid>_rank_<RANK>.log ("%(asctime)s [%(levelname)s] [%(process)d] %(filename)s: %(message)s");
- a monitor reads the config again whenever its mtime (whole seconds) differs from the last one seen, and a
  config counts only when that mtime is later than the second init ran (shm_to_prof_conf_context); the real
  monitor is a forked process polling every 2 s and passing the JSON through shared memory: here the poll runs
  in step(), every NPU_DOUBLE_DP_POLL_S seconds (default 2);
- 26.x: step() counts steps from 1 and starts profiling when the count equals the config's start_step, for
  warmup + active steps, steps labelled with its own count (_set_step_num_offset_for_dynamic_prof); 2.1: the
  next step after a new config, for active steps, start_step ignored;
- is_rank + rank_list: only those ranks profile, and their analysis is turned off (unless async_mode, 26.x);
- each capture: profile(schedule(wait=0, warmup, active, repeat=1), on_trace_ready=
  tensorboard_trace_handler(prof_dir, analyse_flag=analyse), record_shapes=...), logged as
  "Start Dynamic Profiler at N step." / "Stop Dynamic Profiler at N step.".
"""
import json
import logging
import os
import socket
import time

from torch_npu import VERSION

from ._config import ProfilerActivity
from .profiler import profile, tensorboard_trace_handler
from .scheduler import Schedule as schedule

__all__ = ["init", "step", "start"]

TEMPLATE = {
    "activities": ["CPU", "NPU"], "prof_dir": "./", "analyse": False, "async_mode": False, "record_shapes": False,
    "profile_memory": False, "with_stack": False, "with_flops": False, "with_modules": False, "active": 1,
    "warmup": 0, "start_step": 0, "is_rank": False, "rank_list": [],
    "experimental_config": {"profiler_level": "Level0", "aic_metrics": "AiCoreNone", "l2_cache": False,
                            "op_attr": False, "gc_detect_threshold": None, "data_simplification": True,
                            "record_op_args": False, "export_type": ["text"], "msprof_tx": False}}
_log = logging.getLogger("DynamicProfiler")


def _rank() -> int:
    try:
        return int(os.environ["RANK"])
    except (KeyError, ValueError):
        return -1


class _Config:
    """ConfigContext: what a config says, each key checked as torch_npu does (wrong types fall back)."""

    def __init__(self, data: dict):
        self.valid = bool(data.get("is_valid", False))
        self.activities = [getattr(ProfilerActivity, a.upper()) for a in data.get("activities") or []
                           if isinstance(a, str) and hasattr(ProfilerActivity, a.upper())]
        self.prof_dir = data.get("prof_dir", "./")
        self.analyse = data.get("analyse", False) is True
        self.async_mode = data.get("async_mode", False) is True and VERSION != "2.1"
        self.options = {k: data.get(k, False) is True for k in
                        ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")}
        active = data.get("active", 1)
        self.active = active if isinstance(active, int) and active > 0 else 1
        warmup = data.get("warmup", 0) if VERSION != "2.1" else 0
        self.warmup = warmup if isinstance(warmup, int) and warmup >= 0 else 0
        start = data.get("start_step", 0)
        self.start_step = start if isinstance(start, int) and start >= -1 else 0
        ranks = data.get("rank_list") if data.get("is_rank") is True else None
        if isinstance(ranks, list):
            self.valid = self.valid and _rank() in {r for r in ranks if isinstance(r, int) and r >= 0}
            self.analyse = self.analyse and self.async_mode


class _DynamicProfile:
    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        self.config_path = os.path.join(self.path, "profiler_config.json")
        log_dir = os.path.join(self.path, "log")
        os.makedirs(log_dir, exist_ok=True)
        name = f"dp_{socket.gethostname()}_{os.getpid()}_rank_{_rank()}.log"
        handler = logging.FileHandler(os.path.join(log_dir, name))
        handler.setFormatter(logging.Formatter("%(asctime)s [%(levelname)s] [%(process)d] %(filename)s: %(message)s"))
        _log.handlers[:] = [handler]
        _log.setLevel(logging.DEBUG)
        if not os.path.exists(self.config_path):
            with open(self.config_path, "w") as f:
                json.dump(TEMPLATE, f, indent=4)
        self.init_time = int(time.time())
        self.last_mtime = int(os.path.getmtime(self.config_path))
        self.poll_s = float(os.environ.get("NPU_DOUBLE_DP_POLL_S", "2"))
        self.last_poll = -1e9
        self.cur_step, self.step_num, self.prof, self.cfg = 0, 0, None, None

    def _poll(self):
        if time.monotonic() - self.last_poll < self.poll_s:
            return None
        self.last_poll = time.monotonic()
        mtime = int(os.path.getmtime(self.config_path))
        if mtime == self.last_mtime:
            return None
        self.last_mtime = mtime
        try:
            with open(self.config_path) as f:
                data = json.load(f)
            data["is_valid"] = True
        except (OSError, ValueError):
            data = {"is_valid": False}
        if mtime <= self.init_time:
            return None
        cfg = _Config(data)
        return cfg if cfg.valid else None

    def step(self):
        self.cur_step += 1
        cfg = self._poll() if VERSION != "2.1" or self.prof is None else None
        if cfg is not None:
            self.cfg = cfg
        if self.prof is not None:
            self.prof.step()
            self.step_num -= 1
            if self.step_num == 0:
                self.prof.stop()
                self.prof = None
                _log.info("Stop Dynamic Profiler at %d step.", self.cur_step)
        elif self.cfg is not None and (VERSION == "2.1" or self.cur_step == self.cfg.start_step):
            self.step_num = self.cfg.active + self.cfg.warmup
            self._enable(self.cfg)
            self.cfg = None

    def _enable(self, cfg):
        handler = (tensorboard_trace_handler(cfg.prof_dir, analyse_flag=cfg.analyse) if VERSION == "2.1" else
                   tensorboard_trace_handler(cfg.prof_dir, analyse_flag=cfg.analyse, async_mode=cfg.async_mode))
        self.prof = profile(activities=cfg.activities, schedule=schedule(wait=0, warmup=cfg.warmup, active=cfg.active,
                                                                          repeat=1, skip_first=0),
                            on_trace_ready=handler, **cfg.options)
        if VERSION != "2.1":
            self.prof._set_step_num_offset_for_dynamic_prof(self.cur_step)
        self.prof.start()
        _log.info("Start Dynamic Profiler at %d step.", self.cur_step)


_instance = None


def init(path: str):
    global _instance
    if _instance is None:
        _instance = _DynamicProfile(path)


def step():
    if _instance is not None:
        _instance.step()


def start(config_path: str = None):
    raise NotImplementedError("the double implements init() and step() only")
