"""Check every finding's claim (digest.proto Claim, docs/rules.md "Claims") against the figures the views
show: `problems(hits, digest=..., analysis=...)` returns what is wrong, one line each ([] when all holds).

The views' figures are read here the way each view reads them (the Overview's window_figures and
breakdown, the Operators / Kernels / Memory / Communication rows of the digest, the Ranks view's rows of
analyse_ranks), never from the finding itself; and no finding may contradict a figure shown beside it.
"""
import math
import re

from canning_tb.analysis import glossary
from canning_tb.analysis.common import HOST_COMM_RE
from canning_tb.analysis.summary import window_figures

SHARES = ("dataloader_share", "comm_not_hidden_share", "device_idle_share", "compute_share", "idle_share")
CATEGORIES = ("compute", "overlapped", "communication", "memcpy", "memset", "device_wait", "runtime", "dataloader",
              "host", "idle")
RANK_FIGURES = {"computing": "computing_ns", "communication": "communication_ns", "free": "free_ns"}
BELOW = {"kernel_mean", "bandwidth", "roof_share"}  # figures whose rule fires below its threshold
TF32_RE = re.compile(r"tf32|s1688|s16816", re.I)
TORCH_FUSED = {"Adam", "AdamW", "SGD", "Adagrad"}  # torch 2.x classes with fused=True (inspect.signature)


def _row(digest, hit, view, rows):
    names = [e.row for e in hit.evidence if e.view == view and e.row]
    return next((r for r in rows if names and r.name == names[0]), None)


def view_value(hit, digest=None, analysis=None):
    """The figure of `hit.claim` as its view shows it; None when this reading does not know the figure."""
    c = hit.claim
    key = c.figure
    if digest is not None and c.scope != "ranks":
        a = digest.average
        if key in SHARES:
            return window_figures(digest)[key]
        if key in CATEGORIES:
            return getattr(a, f"{key}_ns") / a.total_ns if a.total_ns else None
        if key == "slowest_op":
            top = window_figures(digest)["slowest_op"]
            return top["share"] if top else None
        if key in ("host_total", "op_calls"):
            row = _row(digest, hit, "operators", digest.ops_by_name)
            return None if row is None else float(row.host_total_ns if key == "host_total" else row.calls)
        if key == "tc_eligible":
            cores = {x.core: x.total_ns for x in digest.cores}
            total = sum(cores.values())
            return cores.get("Other, under Tensor-Core-eligible operators", 0) / total if total else None
        if key == "roof_share":  # the Operators view's "Roof" column of the row named
            row = _row(digest, hit, "operators", digest.ops_by_name)
            return None if row is None or not row.work.model else row.work.roof_share
        if key == "kernel_max":
            row = _row(digest, hit, "kernels", digest.kernels_by_name)
            return None if row is None else float(row.max_ns)
        if key == "kernel_mean":
            ks = [k for k in digest.kernels_by_name if not k.communication]
            calls = sum(k.calls for k in ks)
            return sum(k.total_ns for k in ks) / calls if calls else None
        if key in ("memory_peak", "peak_reserved"):
            rows = [m for m in digest.memory if any(e.row == m.device for e in hit.evidence)]
            if not rows:
                return None
            m = rows[0]
            return float(max(m.peak_allocated_bytes, m.peak_reserved_bytes) if key == "memory_peak"
                         else m.peak_reserved_bytes)
        if key == "path_python_share":  # the critical path section, summed over the kept steps
            kept = set(digest.average_steps)
            paths = [p for p in digest.critical_path if p.number in kept]
            total = sum(p.dur_ns for p in paths)
            return sum(p.by_category["python"] for p in paths if "python" in p.by_category) / total if total else None
        if key == "bandwidth":
            bws = [link.bandwidth_gbps for link in digest.communication.links]
            return c.value if any(math.isclose(b, c.value, rel_tol=1e-9) for b in bws) else None
    if analysis is not None and c.scope == "ranks" and key in RANK_FIGURES:
        rows = {r["rank"]: r for r in analysis["ranks"]}
        named = [e.rank for e in hit.evidence if e.rank in rows]
        return sum(rows[r][RANK_FIGURES[key]] for r in named) / len(named) if named else None
    return None


def _quoted(hit) -> bool:
    """The text quotes the claim's figure: a share as the views print it, or a time in ms."""
    c = hit.claim
    if c.scope == "ranks" and c.figure in tuple(RANK_FIGURES) + ("transfer",):
        return f"{c.value / 1e6:.3f} ms" in hit.seen
    if c.figure in SHARES + CATEGORIES + ("slowest_op", "tc_eligible", "kernel_share", "path_python_share"):
        return f"{100 * c.value:.1f}%" in hit.seen
    return True  # counts, bytes and event totals are quoted in their own words


def _contradictions(hit, digest):
    """What the finding says against a figure shown beside it (the Overview, the Kernels view)."""
    out = []
    if digest is None:
        return out
    tc = [g.tensor_core_share for g in digest.gpu_efficiency if g.tensor_core_share >= 0]
    on_tc = sum(x.total_ns for x in digest.cores if x.core == "Tensor Cores")
    text = " ".join((hit.title, hit.seen, hit.why, hit.change_torch))
    if hit.rule == "tensor_cores_unused" and (on_tc > 0 or any(s > 0 for s in tc)):
        out.append("says Tensor Cores are not used; the Overview shows Tensor Core time")
    if re.search(r"Tensor Cores? (are )?(idle|not used)|keep Tensor Cores", text) and hit.rule != "tensor_cores_unused" \
            and (on_tc > 0 or any(s > 0 for s in tc)):
        out.append("says Tensor Cores idle beside a Tensor Core share above 0")
    if re.search(r"allow_tf32|TF32 for fp32", hit.change_torch) and any(TF32_RE.search(k.name)
                                                                      for k in digest.kernels_by_name):
        out.append("advises TF32 where TF32 kernels run")
    fused = re.search(r"torch\.optim\.(\w+)\(\.\.\., fused=True\)", hit.change_torch)
    if fused and fused.group(1) not in TORCH_FUSED:
        out.append(f"advises fused=True for torch.optim.{fused.group(1)}, which has no such argument")
    if hit.rule == "unfused_optimizer" and re.search(r"The Fused\w* optimizer", hit.title):
        out.append("calls a fused class unfused")
    if hit.rule == "dominant_op" and HOST_COMM_RE.search(hit.title.removesuffix(" dominates")):
        out.append("names a collective as an operator to make faster")
    return out


def problems(hits, digest=None, analysis=None) -> list[str]:
    """Every way the findings' claims disagree with the views (see the module doc)."""
    out = []
    keys = glossary.entries()
    for hit in hits:
        c, name = hit.claim, f"{hit.rule} ({hit.title})"
        if hit.needs:
            continue
        if c.figure not in keys:
            out.append(f"{name}: figure {c.figure!r} is not in the glossary")
            continue
        shown = view_value(hit, digest, analysis)
        if shown is not None and not math.isclose(shown, c.value, rel_tol=1e-6, abs_tol=1e-9):
            out.append(f"{name}: claims {c.figure} = {c.value}, the view shows {shown}")
        if not math.isnan(c.threshold) and (c.value >= c.threshold if c.figure in BELOW else c.value < c.threshold):
            out.append(f"{name}: {c.figure} {c.value} does not pass its threshold {c.threshold}")
        if not _quoted(hit):
            out.append(f"{name}: the text does not quote {c.figure} = {c.value}")
        if hit.gain_ns >= 0:
            if c.step_ns > 0 and hit.gain_ns > c.step_ns:
                out.append(f"{name}: gain {hit.gain_ns} above the step {c.step_ns}")
            if hit.gain_ns < c.floor_ns:
                out.append(f"{name}: gain {hit.gain_ns} under the absolute floor {c.floor_ns}")
            if c.noise_ns >= 0 and hit.gain_ns <= c.noise_ns and (c.scope == "ranks" or hit.severity == "warning"
                                                                 or "noise floor" not in hit.seen):
                out.append(f"{name}: gain {hit.gain_ns} within the noise floor {c.noise_ns}, and not said so")
            if c.step_ns > hit.gain_ns and not math.isclose(hit.speedup, c.step_ns / (c.step_ns - hit.gain_ns), rel_tol=1e-6):
                out.append(f"{name}: speedup {hit.speedup} is not step / (step - gain)")
        for other in c.shared:
            match = [h for h in hits if h.rule == other.rule and h.title == other.title]
            if not match or not any(s.rule == hit.rule and s.ns == other.ns for s in match[0].claim.shared):
                out.append(f"{name}: shares {other.ns} ns with {other.rule}, which does not say so")
        out += [f"{name}: {x}" for x in _contradictions(hit, digest)]
    return out
