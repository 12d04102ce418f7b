"""The process-wide output folder (FAKE, see the package docstring), as _profiler_path_creator.py.

A singleton: every tensorboard_trace_handler(dir_name, worker_name) call re-points it. The window's
folder is made when the window STARTS (init_trace), named {worker}[_{pid}]_{ts}_ascend_pt.
"""
import os
import shutil
import socket
from datetime import datetime, timezone

from torch_npu import VERSION


class ProfPathCreator:
    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
            cls._instance._worker_name = cls._instance._dir_path = cls._instance._prof_path = None
            cls._instance._export_only_mode = False
        return cls._instance

    def init(self, worker_name=None, dir_name=None, export_only_mode=False):
        self._export_only_mode = export_only_mode
        self._worker_name = worker_name if isinstance(worker_name, str) and worker_name else None
        self._dir_path = dir_name if isinstance(dir_name, str) and dir_name else None

    def create_prof_dir(self):
        if self._dir_path:
            dir_path = self._dir_path
        elif self._export_only_mode:
            dir_path = os.path.join(os.getcwd(), "export_only_prof_dir")
        else:
            dir_path = os.getcwd()
        worker = self._worker_name or f"{socket.gethostname()}_{os.getpid()}"
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S%f")[:-3]
        name = f"{worker}_{stamp}_ascend_pt" if VERSION == "2.1" else f"{worker}_{os.getpid()}_{stamp}_ascend_pt"
        self._prof_path = os.path.join(dir_path, name)
        os.makedirs(self._prof_path)  # a name taken twice in one millisecond fails, as in torch_npu

    def get_prof_dir(self):
        return self._prof_path

    def delete_prof_dir(self):
        shutil.rmtree(self._prof_path, ignore_errors=True)
