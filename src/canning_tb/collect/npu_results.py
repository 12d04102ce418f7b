"""Results of an NPU collection, read from what torch_npu's handler wrote.

torch_npu's profile has no key_averages() or events() (on any release), and its export_chrome_trace
re-runs the whole analysis; but its handler already wrote the window's `*_ascend_pt` folder. So on
NPU, Profile reads that folder through canning_tb.ingest and its statistics from canning_tb.analysis;
here they are only laid out the way torch's key_averages() is.
"""
from __future__ import annotations

import os
from dataclasses import dataclass


class NotAnalysedError(RuntimeError):
    """The window's folder holds no analysed output (yet)."""


def window_table(folder: str, analysis: str):
    """The EventTable of torch_npu's folder of one window; NotAnalysedError while it has no output."""
    from canning_tb.ingest.ascend.read import read_ascend
    from canning_tb.util.manifest import ascend_status
    if not folder:
        raise NotAnalysedError("no NPU window was collected yet: step through a whole window of the schedule, "
                               "or stop() the profile")
    status = ascend_status(folder, analysis)
    if status == "analysing":
        raise NotAnalysedError(f"torch_npu is still analysing {folder} (async_mode); ask again when it is done")
    if status == "incomplete":
        raise NotAnalysedError(f"{folder} holds torch_npu's raw data only (not analysed); call "
                               f"prof.analyse() or torch_npu.profiler.profiler.analyse({folder!r}) first")
    return read_ascend(folder)


def window_digest(folder: str, analysis: str):
    from canning_tb.analysis.build import build_digest
    return build_digest(window_table(folder, analysis))


@dataclass(frozen=True)
class OpAverage:
    """One operator, in torch's FunctionEventAvg terms (times in µs, as torch reports them)."""
    key: str
    count: int
    self_cpu_time_total: float
    cpu_time_total: float
    self_device_time_total: float
    device_time_total: float
    input_shapes: str = ""
    stack: str = ""

    @property
    def self_npu_time_total(self) -> float:
        return self.self_device_time_total

    @property
    def npu_time_total(self) -> float:
        return self.device_time_total


_SORT_ALIASES = {"self_npu_time_total": "self_device_time_total", "npu_time_total": "device_time_total",
                 "self_cuda_time_total": "self_device_time_total", "cuda_time_total": "device_time_total"}
_COLUMNS = (("Name", "key"), ("Self CPU", "self_cpu_time_total"), ("CPU total", "cpu_time_total"),
            ("Self NPU", "self_device_time_total"), ("NPU total", "device_time_total"), ("# of Calls", "count"))


class KeyAverages(list):
    """key_averages() on NPU: the window's operators by name, with torch's .table()."""

    @classmethod
    def from_digest(cls, digest, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> KeyAverages:
        """By name, or by name + input shapes, or by name + call stack, as torch's key_averages groups."""
        ops = digest.ops_by_shape if group_by_input_shape else \
            digest.ops_by_stack if group_by_stack_n else digest.ops_by_name
        return cls(OpAverage(o.name, int(o.calls), o.host_self_ns / 1e3, o.host_total_ns / 1e3,
                             o.device_self_ns / 1e3, o.device_total_ns / 1e3, o.input_shapes, o.call_stack)
                   for o in ops)

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_name_column_width: int = 55,
              **_ignored) -> str:
        """A text table like torch's EventList.table (times in ms or µs as the values need)."""
        rows = list(self)
        if sort_by:
            attr = _SORT_ALIASES.get(sort_by, sort_by)
            if not hasattr(OpAverage, attr) and attr not in OpAverage.__dataclass_fields__:
                raise ValueError(f"cannot sort by {sort_by!r}; use one of "
                                 f"{', '.join(a for _, a in _COLUMNS[1:])}")
            rows.sort(key=lambda r: getattr(r, attr), reverse=True)
        if row_limit and row_limit > 0:
            rows = rows[:row_limit]
        cells = [[_name(r.key, max_name_column_width)] + [_time(getattr(r, a)) for _, a in _COLUMNS[1:-1]]
                 + [str(r.count)] for r in rows]
        header = [h for h, _ in _COLUMNS]
        widths = [max(len(x) for x in col) for col in zip(header, *cells)]
        line = "-" * (sum(widths) + 2 * (len(widths) - 1))
        fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
        out = [line, fmt.format(*header), line] + [fmt.format(*c) for c in cells] + [line]
        total_cpu = sum(r.self_cpu_time_total for r in self)
        total_dev = sum(r.self_device_time_total for r in self)
        out += [f"Self CPU time total: {_time(total_cpu)}", f"Self NPU time total: {_time(total_dev)}"]
        return "\n".join(out) + "\n"


def _name(key: str, width: int) -> str:
    return key if len(key) <= width else key[: width - 3] + "..."


def _time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def offline_analyse(folder: str) -> None:
    """torch_npu's offline analysis of one window folder (blocking; needs CANN)."""
    from torch_npu.profiler.profiler import analyse
    if not folder or not os.path.isdir(folder):
        raise NotAnalysedError(f"no torch_npu folder to analyse ({folder!r})")
    analyse(folder)
