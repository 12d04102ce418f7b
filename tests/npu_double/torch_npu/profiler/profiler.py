"""torch_npu.profiler.profile, tensorboard_trace_handler and analyse (FAKE, see the package docstring).

As in torch_npu: the keyword-only signature of each version, no key_averages() and no events(),
every public method printing and swallowing its errors, steps wrapped in ProfilerStep#N only when a
schedule is given, and export_chrome_trace re-running the analysis to write a bare JSON array.
"""
from typing import Callable

import torch.autograd.profiler as torch_prof

from torch_npu import VERSION

from ._config import no_exception_func, print_warn_msg
from ._interface import ProfActionController, _analyse, _ProfInterface
from ._path_creator import ProfPathCreator
from .scheduler import ProfilerAction, _default_schedule_fn


class _KinetoProfile:
    def __init__(self, *, activities=None, record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None, schedule=None):
        self.metadata = {}
        self.prof_if = _ProfInterface(activities=activities, record_shapes=record_shapes,
                                      profile_memory=profile_memory, with_stack=with_stack, with_flops=with_flops,
                                      with_modules=with_modules, experimental_config=experimental_config,
                                      schedule=schedule, metadata=self.metadata)

    @no_exception_func()
    def export_chrome_trace(self, output_path: str):
        if not output_path.endswith(".json"):
            raise RuntimeError("Invalid parameter output_path, which must be a json file.")
        if not self.prof_if.prof_path:
            print_warn_msg("Invalid profiling path.")
            return
        _analyse(self.prof_if.prof_path, "export_chrome_trace", output_path, False)


class _Profile(_KinetoProfile):
    def _setup(self, schedule, on_trace_ready, kwargs):
        if schedule and isinstance(schedule, Callable):
            self.schedule, self.record_steps = schedule, True
        else:
            self.schedule, self.record_steps = _default_schedule_fn, False
        super().__init__(schedule=self.schedule, **kwargs)
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self._step_num_offset = 0  # dynamic_profile's: steps labelled as its own count (26.x)
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn = None
        self.stopped = False
        self.action_controller = ProfActionController(self, self.prof_if, on_trace_ready)

    @no_exception_func()
    def __enter__(self):
        self.start()
        return self

    @no_exception_func()
    def __exit__(self, exc_type, exc_val, exc_tb):
        self.stop()

    @no_exception_func()
    def start(self):
        self.stopped = False
        if not self.on_trace_ready:
            ProfPathCreator().init(export_only_mode=True)
        self.action_controller.transit_action(ProfilerAction.NONE, self.current_action)
        self._enter_step()

    @no_exception_func()
    def stop(self):
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
        self.action_controller.transit_action(self.current_action, None)
        self.stopped = True

    @no_exception_func()
    def step(self):
        if self.stopped:
            print_warn_msg("Profiler is stopped, step takes no effect!")
            return
        if self.record_steps and self.step_rec_fn:
            self.step_rec_fn.__exit__(None, None, None)
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self.action_controller.transit_action(prev_action, self.current_action)
        self._enter_step()

    def _enter_step(self):
        if self.record_steps:
            self.step_rec_fn = torch_prof.record_function("ProfilerStep#" + str(self.step_num + self._step_num_offset))
            self.step_rec_fn.__enter__()


if VERSION == "2.1":
    class profile(_Profile):
        def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                     profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                     experimental_config=None, use_cuda=None):
            self._setup(schedule, on_trace_ready, dict(
                activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                with_stack=with_stack, with_flops=with_flops, with_modules=with_modules,
                experimental_config=experimental_config))

    @no_exception_func()
    def tensorboard_trace_handler(dir_name: str = None, worker_name: str = None, analyse_flag: bool = True):
        ProfPathCreator().init(worker_name=worker_name, dir_name=dir_name)

        def handler_fn(prof_inst) -> None:
            if analyse_flag:
                prof_inst.prof_if.analyse()
        return handler_fn
else:
    class profile(_Profile):
        def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                     profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                     experimental_config=None, execution_trace_observer=None, custom_trace_id_callback=None,
                     use_cuda=None):
            self._setup(schedule, on_trace_ready, dict(
                activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                with_stack=with_stack, with_flops=with_flops, with_modules=with_modules,
                experimental_config=experimental_config))

        @no_exception_func()
        def _set_step_num_offset_for_dynamic_prof(self, step: int):
            self._step_num_offset = step

    @no_exception_func()
    def tensorboard_trace_handler(dir_name: str = None, worker_name: str = None, analyse_flag: bool = True,
                                  async_mode: bool = False):
        ProfPathCreator().init(worker_name=worker_name, dir_name=dir_name)

        def handler_fn(prof_inst) -> None:
            if analyse_flag:
                prof_inst.prof_if.analyse(async_mode=async_mode)
        return handler_fn


@no_exception_func()
def analyse(profiler_path: str, max_process_number: int = 1):
    """Offline analysis of a folder written with analyse_flag=False."""
    _analyse(profiler_path, "tensorboard", None, False)
