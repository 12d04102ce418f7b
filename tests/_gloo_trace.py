"""A real one-rank gloo run on the CPU under torch.profiler, for tests that need host collectives
in a real trace (skips where torch or gloo is missing)."""
import pytest


def one_rank_gloo_trace(tmp_path, collectives):
    """Profile 3 steps (1 warm-up, 2 recorded) of `collectives(dist, x)` then `(x * 2).sum()` on a
    4096-float tensor; returns the path of the exported Chrome trace."""
    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch without gloo")
    from torch.profiler import ProfilerActivity, profile, schedule

    path = tmp_path / "gloo.pt.trace.json"
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    try:
        x = torch.randn(4096)
        with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=2),
                     on_trace_ready=lambda p: p.export_chrome_trace(str(path))) as prof:
            for _ in range(3):
                collectives(dist, x)
                (x * 2).sum()
                prof.step()
    finally:
        dist.destroy_process_group()
    return path
