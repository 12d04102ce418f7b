"""Where the files of a torch_npu window are, recognised by what a folder holds, never by its name.

Three shapes exist in users' hands (msprof-analyze recognises the first two the same way):
- a window folder (``*_ascend_pt``, or any name in 2023) holding ``ASCEND_PROFILER_OUTPUT/`` and
  ``profiler_info[_N].json``; without ``ASCEND_PROFILER_OUTPUT/`` but with ``FRAMEWORK/`` or
  ``PROF_*`` it is a window not analysed yet (or still being written);
- a bare export folder: the exported files directly inside (a copied ``ASCEND_PROFILER_OUTPUT/``);
- ``ascend_pytorch_profiler[_N].db`` files alone: one window per file when a folder holds several.
Discovery (store/discover.py) and the reader share these rules.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from canning_tb.util.safe_files import read_file

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
DB_RE = re.compile(r"^ascend_pytorch_profiler(?:_(\d+))?\.db$")
INFO_RE = re.compile(r"^profiler_info(?:_\d+)?\.json$")
TEXT_FILES = frozenset({"trace_view.json", "kernel_details.csv", "operator_details.csv", "memory_record.csv",
                        "step_trace_time.csv", "communication.json", "communication_matrix.json",
                        "operator_memory.csv", "npu_module_mem.csv", "op_statistic.csv"})
# what only torch_npu writes: any of these makes a folder an export folder
_SIGNATURE_FILES = frozenset({"kernel_details.csv", "step_trace_time.csv", "operator_details.csv",
                              "communication.json", "communication_matrix.json", "npu_module_mem.csv"})
_RAW_DIRS_RE = re.compile(r"^(FRAMEWORK|PROF_\d+_\d+_[0-9a-zA-Z]+)$")


def _listdir(folder: str) -> tuple[set[str], set[str]]:
    """(file names, folder names) directly in folder; empty when unreadable."""
    files, dirs = set(), set()
    try:
        for e in os.scandir(folder):
            if e.name.startswith("."):
                continue
            (dirs if e.is_dir() else files).add(e.name)
    except OSError:
        pass
    return files, dirs


def _is_ascend_trace(path: str) -> bool:
    """torch_npu's trace_view.json is a bare JSON array of events (Kineto writes an object)."""
    try:
        head = read_file(path, 4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return False
    return head[:1] == b"[" and b'"ph"' in head


def is_export_folder(folder: str, files: set[str]) -> bool:
    """The folder directly holds torch_npu's exported files."""
    if files & _SIGNATURE_FILES or any(DB_RE.match(n) for n in files):
        return True
    return "trace_view.json" in files and _is_ascend_trace(os.path.join(folder, "trace_view.json"))


def window_kind(folder: str, files: set[str], dirs: set[str]) -> str:
    """'window' (holds ASCEND_PROFILER_OUTPUT/), 'raw' (profiled, not analysed yet), 'export'
    (bare exported files), or '' (not torch_npu output)."""
    if OUTPUT_DIR in dirs:
        return "window"
    if any(INFO_RE.match(n) for n in files) and any(_RAW_DIRS_RE.match(d) for d in dirs):
        return "raw"
    if is_export_folder(folder, files):
        return "export"
    return ""


def scan(folder: str) -> str:
    """window_kind of a folder, listing it."""
    files, dirs = _listdir(folder)
    return window_kind(folder, files, dirs)


def loose_dbs(files: set[str]) -> list[str]:
    """Several profiler dbs in one folder are several windows (one per rank)."""
    dbs = sorted(n for n in files if DB_RE.match(n))
    return dbs if len(dbs) > 1 else []


@dataclass
class Layout:
    root: str  # where profiler_info*.json / profiler_metadata.json are looked for
    out_dir: str  # where the exported files are
    base: str  # the name shown for the window (its folder or db file)
    names: frozenset[str]  # files in out_dir that are read
    db: str | None = None  # the profiler db to read (no text export, or a db given alone)
    ignored_dbs: tuple[str, ...] = ()  # dbs beside a text export: the text wins
    alone: bool = False  # one db file of several in a folder: the folder's profiler_info is not its own

    @property
    def path_shown(self) -> str:
        return os.path.join(self.out_dir, self.db) if self.alone else self.out_dir

    def path(self, name: str) -> str:
        return os.path.join(self.out_dir, name)

    def display(self, name: str) -> str:
        inner = os.path.basename(self.out_dir) if self.out_dir != self.root else ""
        return "/".join(x for x in (os.path.basename(self.root), inner, name) if x)


def locate(path: str):
    """The Layout of a window given as a folder or a db file; InputError when it holds no export."""
    from ..table import InputError
    if os.path.isfile(path) and DB_RE.match(os.path.basename(path)):
        folder = os.path.dirname(path)
        return Layout(root=folder, out_dir=folder, base=os.path.basename(path),
                      names=frozenset({os.path.basename(path)}), db=os.path.basename(path), alone=True)
    if not os.path.isdir(path):
        raise InputError(path, "not a folder")
    files, dirs = _listdir(path)
    if OUTPUT_DIR in dirs:
        root, out_dir = path, os.path.join(path, OUTPUT_DIR)
        files = _listdir(out_dir)[0]
    elif is_export_folder(path, files):
        parent = os.path.dirname(path)
        # a bare ASCEND_PROFILER_OUTPUT inside its window folder: profiler_info is one level up
        root = parent if os.path.basename(path) == OUTPUT_DIR else path
        out_dir = path
    else:
        raise InputError(path, f"no {OUTPUT_DIR} folder and no exported files (truncated, still being written, "
                               f"or profiled with analysis off: run torch_npu.profiler.profiler.analyse on it)")
    return _layout(root, out_dir, files)


def _layout(root: str, out_dir: str, files: set[str]) -> Layout:
    dbs = sorted(n for n in files if DB_RE.match(n))
    base = os.path.basename(root)
    if files & TEXT_FILES or not dbs:
        return Layout(root, out_dir, base, frozenset(files), ignored_dbs=tuple(dbs))
    names = {dbs[0]} | ({"analysis.db"} & files)
    return Layout(root, out_dir, base, frozenset(names), db=dbs[0])
