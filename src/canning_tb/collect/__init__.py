"""Collection: Profile, profile, start/stop, backend choice. torch / torch_npu are imported only when used."""
from .activity import ProfilerActivity
from .backend import NpuUnavailableError
from .profile import Profile, profile, start, stop
from .schedule import OnDemand, Schedule, on_demand, schedule

__all__ = ["Profile", "profile", "start", "stop", "ProfilerActivity", "schedule", "Schedule", "on_demand", "OnDemand",
           "NpuUnavailableError"]
