"""The text face of `--mode=compare`: the comparison (analysis.compare, as a dict) in tables."""
from __future__ import annotations


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


def _head(comp: dict, pairing: dict | None = None) -> list[str]:
    step = comp["verdict"]["step_time"]
    lines = [f"Verdict: {comp['verdict']['text']}"]
    if pairing:
        lines.append(f"Compared: {pairing['text']}")
    if comp.get("gate"):
        lines.append(f"Gate ({comp['gate']['status']}): {comp['gate']['text']}")
    lines += machine_code_lines(comp)
    lines.append(f"Step time (mean): base {_ms(comp['base']['step_ns'])} ms ({comp['base']['steps']} steps, "
                 f"{comp['base']['windows']} windows) -> {_ms(comp['target']['step_ns'])} ms "
                 f"({comp['target']['steps']} steps, {comp['target']['windows']} windows): "
                 f"{_ms(step['delta'] or 0)} ms, {_pct(step['delta_pct'])}")
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


def machine_code_lines(comp: dict) -> list[str]:
    """The step-time change split into the machine's part and the code's (analysis/compare/attribution.py)."""
    a = comp["attribution"]
    if a["machine_ns"] is None:
        machine = "unknown (no operator ran on both sides with the same calls and shapes)"
    else:
        machine = (f"{a['machine_ns'] / 1e6:+.3f} ms (common factor {a['factor']:.3f}, quartiles "
                   f"{a['factor_low']:.3f} .. {a['factor_high']:.3f}, over {a['matched_operators']} operators)")
    code = f"{a['code_ns'] / 1e6:+.3f} ms"
    if a["code_interval"]:
        low, high = a["code_interval"]["low_ns"] / 1e6, a["code_interval"]["high_ns"] / 1e6
        code += f" (95 % interval {low:+.3f} .. {high:+.3f})"
    return [f"Machine: {machine} per step", f"Code: {code} per step"]


def _contributors(comp: dict) -> list[str]:
    """Named operators first; what no operator explains apart (never netted against a named change)."""
    contrib = comp["contributors"]
    lines = ["", f"Contributors to the step-time change ({float(_ms(contrib['step_delta_ns'])):+.3f} ms/step):"]
    for o in contrib["operators"]:
        lines.append(f"  {o['name'][:60]:<60} {o['delta_ns'] / 1e6:>+10.3f} ms  {o['status']}")
    lines.append("  Not explained by a named operator (overlap, gaps, work outside operators), apart:")
    lines.append(f"  {'  rest of the step':<60} {contrib['unexplained_ns'] / 1e6:>+10.3f} ms")
    items = comp["attribution"]["code_items"]
    if items:
        lines += ["", "The code's operators (their time beyond the machine's common factor, ms/step):"]
        for i in items:
            lines.append(f"  {i['name'][:60]:<60} {i['excess_ns'] / 1e6:>+10.3f} ms  {i['why']}")
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


def text_report(comp: dict, top: int, pairing: dict | None = None) -> str:
    time = ("device self time where an operator ran device work, else host self time" if comp["metric"] == "device"
            else "host self time")
    lines = (_head(comp, pairing) + _breakdown(comp) + _contributors(comp) + ["", f"Operator time: {time}, per step."]
             + _rows("Operator", comp["operators"], top)
             + (_rows("Kernel family", comp["kernel_families"], top) + _rows("Kernel", comp["kernels"], top)
                if comp["kernels"] else [])
             + _communication(comp))
    return "\n".join(lines) + "\n"
