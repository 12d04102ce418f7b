"""Capture on demand (`ps.on_demand()`), end to end: the request and status format (request.py), their
files under `<run>/.canning-capture/` (files.py), the job's watch thread (watch.py; collect/on_demand.py
drives the profile from it), the viewer's side (targets.py: which runs can be asked, ask, state) and
torch_npu's own dynamic-profile config (npu.py). The plugin's route and `canning-prof capture` are front
doors that only call targets.py."""
