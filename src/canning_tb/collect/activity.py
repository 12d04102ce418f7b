"""ProfilerActivity without torch: the names users pass, mapped to a backend's enum only when a profile starts."""
import enum


class ProfilerActivity(enum.Enum):
    CPU = "CPU"
    CUDA = "CUDA"
    NPU = "NPU"

    def __repr__(self) -> str:  # reads like torch's: ProfilerActivity.CPU
        return f"ProfilerActivity.{self.name}"


def normalize(activities) -> list:
    """Our enum, torch's or torch_npu's enum, or a string -> our enum; order kept, duplicates dropped."""
    out = []
    for a in activities:
        name = a if isinstance(a, str) else getattr(a, "name", None) or str(a).rsplit(".", 1)[-1]
        name = name.upper()
        if name not in ProfilerActivity.__members__:
            raise ValueError(f"unknown profiler activity {a!r}; use one of CPU, CUDA, NPU")
        act = ProfilerActivity[name]
        if act not in out:
            out.append(act)
    return out
