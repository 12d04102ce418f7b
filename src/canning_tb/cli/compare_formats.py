"""The CI faces of compare: Markdown for a pull request's comment, JUnit XML for a CI's test report. Both
show the comparison (analysis.compare, as a dict) as the text report does: no figure of their own."""
from __future__ import annotations

from xml.etree import ElementTree as ET

from canning_tb.analysis.compare.gate import CANNOT_JUDGE, REGRESSION

from .compare_text import machine_code_lines

_HEAD = {REGRESSION: "❌ regression", CANNOT_JUDGE: "⚠️ cannot judge", "pass": "✅ pass"}


def _cell(text: str) -> str:
    """A table cell: operator names are data (pipes, backticks and HTML written as text)."""
    return (text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'").replace("<", "&lt;")
            .replace(">", "&gt;").replace("\n", " "))


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


def markdown_report(comp: dict, pairing: dict, top: int) -> str:
    gate = comp.get("gate")
    title = f"### canning-prof compare: {_HEAD[gate['status']]}" if gate else "### canning-prof compare"
    v = comp["verdict"]
    lines = [title, "", f"**{_cell(v['step_time']['text'])}**, {_cell(v['noise_text'])}", "",
             f"Compared: {_cell(pairing['text'])}", ""]
    if gate:
        lines += [f"Gate on the {'code' if gate['gate_on'] == 'code' else 'whole step'}, threshold "
                  f"{gate['threshold_pct']:g} %: {_cell(gate['text'])}", ""]
    lines += ["| | baseline | target |", "|---|---:|---:|",
              f"| step (ms, mean) | {_ms(comp['base']['step_ns'])} | {_ms(comp['target']['step_ns'])} |",
              f"| steps (windows) | {comp['base']['steps']} ({comp['base']['windows']}) | "
              f"{comp['target']['steps']} ({comp['target']['windows']}) |", ""]
    lines += [f"- {_cell(line)}" for line in machine_code_lines(comp)] + [""]
    items = comp["attribution"]["code_items"][:top]
    if items:
        lines += ["The code's operators (time beyond the machine's common factor):", "",
                  "| operator | why | base ms/step | target ms/step | beyond the machine ms/step |",
                  "|---|---|---:|---:|---:|"]
        lines += [f"| `{_cell(i['name'])}`{' ' + _cell(i['input_shapes']) if i['input_shapes'] else ''} | {i['why']} | "
                  f"{_ms(i['base_ns'])} | {_ms(i['target_ns'])} | {i['excess_ns'] / 1e6:+.3f} |" for i in items]
        lines.append("")
    contrib = comp["contributors"]
    named = [o for o in contrib["operators"] if o["delta_ns"]][:top]
    if named:
        lines += ["Largest changes per step (named first; the rest apart):", "", "| operator | Δ ms/step | |",
                  "|---|---:|---|"]
        lines += [f"| `{_cell(o['name'])}` | {o['delta_ns'] / 1e6:+.3f} | {o['status']} |" for o in named]
        lines += [f"| *not explained by a named operator* | {contrib['unexplained_ns'] / 1e6:+.3f} | |", ""]
    return "\n".join(lines) + "\n"


def junit_report(comp: dict, pairing: dict) -> str:
    """One test case, the gate: a failure for a regression, an error when it cannot judge."""
    gate = comp.get("gate")
    suite = ET.Element("testsuite", name="canning-prof compare", tests="1",
                       failures="1" if gate and gate["status"] == REGRESSION else "0",
                       errors="1" if gate and gate["status"] == CANNOT_JUDGE else "0")
    what = (f"step time (gate on {gate['gate_on']}, threshold {gate['threshold_pct']:g} %)" if gate
            else "step time (no threshold)")
    case = ET.SubElement(suite, "testcase", classname="canning-prof.compare", name=what)
    detail = "\n".join([comp["verdict"]["text"], f"Compared: {pairing['text']}", *machine_code_lines(comp)]
                       + [f"{i['name']} {i['excess_ns'] / 1e6:+.3f} ms ({i['why']})"
                          for i in comp["attribution"]["code_items"]])
    if gate and gate["status"] == REGRESSION:
        ET.SubElement(case, "failure", message=gate["text"], type="regression").text = detail
    elif gate and gate["status"] == CANNOT_JUDGE:
        ET.SubElement(case, "error", message=gate["text"], type="cannot judge").text = detail
    ET.SubElement(case, "system-out").text = detail
    root = ET.Element("testsuites")
    root.append(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
