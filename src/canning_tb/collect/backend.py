"""Choose and configure the profiler backend: torch.profiler, or torch_npu.profiler when NPU is asked for.

torch and torch_npu are imported here, lazily, so that importing canning never pulls them in.
"""
import inspect
import logging
from dataclasses import dataclass, field

from .activity import ProfilerActivity, normalize
from .schedule import Schedule
from .user_warning import warn_user

log = logging.getLogger(__name__)

NPU_HELP = ("NPU profiling needs torch_npu, and torch_npu needs the Ascend CANN toolkit. Install the torch_npu "
            "release that matches your torch version (pip install torch-npu==<your torch version>), install the CANN "
            "toolkit for your Ascend driver, and load it in the shell before starting Python: "
            "`source /usr/local/Ascend/ascend-toolkit/set_env.sh` (or <CANN install dir>/set_env.sh). "
            "Pass start_on_cpu=True to profile the CPU side only instead of failing.")


class NpuUnavailableError(ImportError):
    """NPU was requested but torch_npu cannot be imported here."""


@dataclass
class Backend:
    name: str                      # "torch" or "torch_npu"
    module: object                 # torch.profiler or torch_npu.profiler
    activities: list               # our ProfilerActivity values actually profiled
    kwargs: dict = field(default_factory=dict)  # ready for module.profile(**kwargs), on_trace_ready excluded

    def new_profile(self, on_trace_ready):
        try:
            return self.module.profile(on_trace_ready=on_trace_ready, **self.kwargs)
        except RuntimeError as e:  # torch_npu checks the device here: say what to do, not only what failed
            if self.name != "torch_npu":
                raise
            raise NpuUnavailableError(f"torch_npu could not build its profiler ({e}). {NPU_HELP}") from e


def _import_torch_npu():
    try:
        import torch  # noqa: F401  torch_npu patches torch, which must come first
        import torch_npu  # noqa: F401
        import torch_npu.profiler as npu_profiler
    except Exception as e:  # ImportError, or OSError/RuntimeError when CANN libraries are missing
        raise NpuUnavailableError(f"ProfilerActivity.NPU was requested but torch_npu cannot be imported "
                                  f"({type(e).__name__}: {e}). {NPU_HELP}") from e
    return npu_profiler


def _accepted_keywords(profile_cls) -> set:
    params = inspect.signature(profile_cls.__init__).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return set()  # takes **kwargs: cannot tell, forward everything
    return {n for n in params if n != "self"}


def _adapt_schedule(sched, module):
    """Any schedule (ours, torch's, torch_npu's, any callable) -> one that answers in this backend's enum.

    torch and torch_npu each look the answer up in their own ProfilerAction; another enum's member
    matches nothing there, and the profile then records nothing, silently.
    """
    if sched is None:
        return None
    actions = module.ProfilerAction

    def backend_schedule(step: int):
        answer = sched(step)
        name = answer if isinstance(answer, str) else getattr(answer, "name", None)
        if name not in actions.__members__:
            raise ValueError(f"schedule returned {answer!r} at step {step}; expected one of "
                             f"{', '.join(actions.__members__)}")
        return actions[name]
    # torch_npu writes the schedule's __dict__ into profiler_info.json: plain numbers only
    params = sched.as_dict() if isinstance(sched, Schedule) else {
        k: v for k, v in getattr(sched, "__dict__", {}).items() if isinstance(v, int) and not k.startswith("_")}
    backend_schedule.__dict__.update(params)
    return backend_schedule


def _npu_settings(module, kwargs: dict) -> None:
    """What torch_npu would silently reset, said aloud (and fixed where the intent is clear)."""
    from canning_tb.util.manifest import PROFILER_SETTINGS
    for key in PROFILER_SETTINGS:
        if key in kwargs and not isinstance(kwargs[key], bool):
            warn_user(f"{key}={kwargs[key]!r} is not a bool: torch_npu would reset it to False; "
                      f"passing {bool(kwargs[key])}")
            kwargs[key] = bool(kwargs[key])
    config = kwargs.get("experimental_config")
    npu_config = getattr(module, "_ExperimentalConfig", None)
    if config is not None and npu_config is not None and not isinstance(config, npu_config):
        warn_user(f"experimental_config is a {type(config).__module__}.{type(config).__name__}; torch_npu "
                  f"takes only torch_npu.profiler._ExperimentalConfig (profiler_level, aic_metrics, ...) and "
                  f"uses its default instead")
        del kwargs["experimental_config"]


def check_npu_device() -> None:
    """torch_npu checks the device only when a profile is built; check it when ours is, with our help."""
    import torch_npu
    available = getattr(getattr(torch_npu, "npu", None), "is_available", None)
    try:
        ok = available() if available is not None else True
    except RuntimeError as e:  # the driver itself fails to answer
        raise NpuUnavailableError(f"torch_npu is installed but the NPU cannot be used ({e}). {NPU_HELP}") from e
    if not ok:
        raise NpuUnavailableError(f"torch_npu is installed but finds no NPU device (driver not loaded, or "
                                  f"ASCEND_RT_VISIBLE_DEVICES hides them). {NPU_HELP}")


def resolve(activities=None, *, start_on_cpu=False, schedule=None, **kwargs) -> Backend:
    """Pick the backend for these activities and filter kwargs to what it accepts (warning for the rest)."""
    import torch
    acts = normalize(activities) if activities is not None else None
    if acts is not None and ProfilerActivity.NPU in acts:
        try:
            module, name = _import_torch_npu(), "torch_npu"
            check_npu_device()
        except NpuUnavailableError as e:
            if not start_on_cpu:
                raise
            warn_user(f"{e} Profiling the CPU only (start_on_cpu=True).")
            acts = [a for a in acts if a is not ProfilerActivity.NPU] or [ProfilerActivity.CPU]
            module, name = torch.profiler, "torch"
    else:
        import torch.profiler as module
        name = "torch"
    if acts is None:  # torch's default: CPU plus CUDA when present
        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    if ProfilerActivity.CUDA in acts and (name != "torch" or not torch.cuda.is_available()):
        why = "with the NPU backend" if name != "torch" else "because CUDA is not available here"
        warn_user(f"ProfilerActivity.CUDA was requested but is ignored {why}; profiling "
                  f"{'CPU and NPU' if name != 'torch' else 'the CPU only'}.")
        acts = [a for a in acts if a is not ProfilerActivity.CUDA] or [ProfilerActivity.CPU]
    native = [getattr(module.ProfilerActivity, a.name) for a in acts]
    kwargs = {"activities": native, "schedule": _adapt_schedule(schedule, module), **kwargs}
    if kwargs["schedule"] is None:
        del kwargs["schedule"]  # torch_npu's signature may reject an explicit None in old versions
    if name == "torch_npu":
        _npu_settings(module, kwargs)
    accepted = _accepted_keywords(module.profile)
    if accepted:
        for k in [k for k in kwargs if k not in accepted]:
            warn_user(f"{name}.profiler.profile does not accept the keyword {k!r} in this version; it is ignored.")
            del kwargs[k]
    return Backend(name=name, module=module, activities=acts, kwargs=kwargs)
