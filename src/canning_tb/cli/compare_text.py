"""The text face of `--mode=compare`: the comparison (analysis.compare, as a dict) in tables."""
from __future__ import annotations


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


def _head(comp: dict) -> list[str]:
    step = comp["verdict"]["step_time"]
    lines = [f"Verdict: {comp['verdict']['text']}",
             f"Step time (mean): base {_ms(comp['base']['step_ns'])} ms ({comp['base']['steps']} steps, "
             f"{comp['base']['windows']} windows) -> {_ms(comp['target']['step_ns'])} ms ({comp['target']['steps']} steps, "
             f"{comp['target']['windows']} windows): {_ms(step['delta'] or 0)} ms, {_pct(step['delta_pct'])}"]
    mem = comp["verdict"]["memory_peak"]
    if mem["base"] is not None and mem["target"] is not None:
        lines.append(f"Memory peak ({comp['verdict']['memory_device']}): {mem['base'] / 2**20:.1f} MiB -> "
                     f"{mem['target'] / 2**20:.1f} MiB ({mem['text']})")
    return lines


def _breakdown(comp: dict) -> list[str]:
    lines = ["", f"{'Category (ms/step)':<20} {'base':>10} {'target':>10} {'delta':>10}"]
    for row in comp["breakdown"]:
        if row["base_ns"] or row["target_ns"]:
            lines.append(f"{row['category']:<20} {_ms(row['base_ns']):>10} {_ms(row['target_ns']):>10} "
                         f"{float(_ms(row['delta_ns'])):>+10.3f}")
    return lines


def _contributors(comp: dict) -> list[str]:
    contrib = comp["contributors"]
    lines = ["", f"Contributors to the step-time change ({float(_ms(contrib['step_delta_ns'])):+.3f} ms/step):"]
    for o in contrib["operators"]:
        lines.append(f"  {o['name'][:60]:<60} {o['delta_ns'] / 1e6:>+10.3f} ms  {o['status']}")
    lines.append(f"  {'(unexplained: overlap, gaps, work outside operators)':<60} "
                 f"{contrib['unexplained_ns'] / 1e6:>+10.3f} ms")
    return lines


def _rows(title: str, rows: list[dict], top: int) -> list[str]:
    lines = ["", f"{title:<48} {'Calls/step':>21} {'ms/step':>23} {'Delta ms':>10} {'Delta':>8}"]
    for r in rows[:top]:
        mark = {"added": " +", "removed": " -"}.get(r["status"], "")
        lines.append(f"{r['key'][:48]:<48} {r['base_calls']:>9.1f} -> {r['target_calls']:<9.1f}"
                     f" {_ms(r['base_ns']):>10} -> {_ms(r['target_ns']):<10} {r['delta_ns'] / 1e6:>+10.3f}"
                     f" {_pct(r['delta_pct']):>8}{mark}")
    return lines


def _communication(comp: dict) -> list[str]:
    if not comp["communication_by_kind"]:
        return []
    lines = ["", f"{'Collective (ms/step)':<24} {'base':>10} {'target':>10} {'delta':>10}"]
    for r in comp["communication_by_kind"]:
        lines.append(f"{r['kind']:<24} {_ms(r['base_ns']):>10} {_ms(r['target_ns']):>10} {r['delta_ns'] / 1e6:>+10.3f}")
    return lines


def text_report(comp: dict, top: int) -> str:
    time = ("device self time where an operator ran device work, else host self time" if comp["metric"] == "device"
            else "host self time")
    lines = (_head(comp) + _breakdown(comp) + _contributors(comp) + ["", f"Operator time: {time}, per step."]
             + _rows("Operator", comp["operators"], top)
             + (_rows("Kernel family", comp["kernel_families"], top) + _rows("Kernel", comp["kernels"], top)
                if comp["kernels"] else [])
             + _communication(comp))
    return "\n".join(lines) + "\n"
