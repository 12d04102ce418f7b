"""Who and where this process is: rank, world size, host, pid, devices, versions. Never imports torch itself."""
import os
import platform
import re
import socket
import sys


def dist_info() -> tuple:
    """(rank, world_size, local_rank): torch.distributed when initialized, else RANK/WORLD_SIZE/LOCAL_RANK, else 0/1/0."""
    rank, world, local = _env_int("RANK", 0), _env_int("WORLD_SIZE", 1), _env_int("LOCAL_RANK", 0)
    dist = getattr(sys.modules.get("torch"), "distributed", None)
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            rank, world = dist.get_rank(), dist.get_world_size()
    except Exception:
        pass
    return rank, world, local


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return default


def default_worker(rank: int) -> str:
    """rank<R>.<host>.<pid>; dots in the host are kept, the window token after it is digits only, so
    ^(?P<worker>.+?)\\.(?P<window>\\d+)\\.pt\\.trace\\.json(\\.gz)?$ still finds both parts."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()) or "host"
    return f"rank{rank}.{host}.{os.getpid()}"


def host_processor() -> str:
    """The CPU's name; platform asks `uname -p` the first time and keeps the answer."""
    return platform.processor() or platform.machine()


def devices() -> list:
    out = [{"kind": "cpu", "name": host_processor(), "index": 0,
            "memory": _host_memory(), "count": os.cpu_count()}]
    torch = sys.modules.get("torch")
    for kind in ("cuda", "npu"):
        mod = getattr(torch, kind, None) if torch is not None else None
        try:
            if mod is None or not mod.is_available():
                continue
            for i in range(mod.device_count()):
                props = mod.get_device_properties(i)
                out.append({"kind": kind, "name": getattr(props, "name", None) or mod.get_device_name(i),
                            "index": i, "memory": int(getattr(props, "total_memory", 0) or 0)})
        except Exception:
            continue
    return out


def _host_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def versions() -> dict:
    out = {"python": platform.python_version()}
    for name in ("torch", "torch_npu"):
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__version__", None):
            out[name] = str(mod.__version__)
    cann = _cann_version()
    if cann:
        out["cann"] = cann
    return out


def _cann_version():
    """CANN writes its version into <toolkit>/version.cfg or ascend_toolkit_install.info; best effort."""
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"):
        home = os.environ.get(var)
        if not home:
            continue
        for fname in ("version.cfg", "ascend_toolkit_install.info"):
            try:
                with open(os.path.join(home, fname), encoding="utf-8", errors="replace") as f:
                    for line in f:
                        m = re.match(r"\s*(?:toolkit_installed_version|version)\s*=\s*\[?([^\]:\s]+:)?([^\]\s]+)", line)
                        if m:
                            return m.group(2)
            except OSError:
                continue
    return None
