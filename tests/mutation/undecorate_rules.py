"""Rewrite the rule modules of a SCRATCH copy of the tree so that mutmut mutates the rules' bodies.

mutmut 3.8.1 never mutates a decorated function, and every rule is one (`@rule("id", "category")`,
analysis/rules/engine.py). Here each `@rule(ARGS)` line right above a `def NAME(` is removed and
`rule(ARGS)(NAME)` is appended at the module's end, in the same order, so the registry (a dict, in
registration order) is filled in the same order and the findings stay the same.

Run only on a copy (docs/mutants.md, "What was run on the rules' bodies"), never on the package:
    python tests/mutation/undecorate_rules.py /tmp/mm_tree_r
It refuses a tree that is a git checkout, so the real code is not changed by mistake.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

RULES_DIR = Path("src/canning_tb/analysis/rules")
DECORATOR = re.compile(r"^@rule\((.*)\)\s*$")
DEF = re.compile(r"^def (\w+)\(")


def undecorate(text: str, name: str) -> tuple[str, int]:
    """The module's text without its `@rule` lines and with the calls at its end; how many were moved."""
    lines = text.splitlines(keepends=True)
    kept, calls = [], []
    for i, line in enumerate(lines):
        m = DECORATOR.match(line)
        if not m:
            kept.append(line)
            continue
        d = DEF.match(lines[i + 1]) if i + 1 < len(lines) else None
        if d is None:
            raise SystemExit(f"{name}:{i + 1}: @rule is not right above a def: {line.strip()}")
        calls.append(f"rule({m.group(1)})({d.group(1)})\n")
    if not calls:
        return text, 0
    out = "".join(kept)
    if not out.endswith("\n"):
        out += "\n"
    note = "\n\n# registered here, not by decorator: mutmut skips decorated functions\n"
    return out + note + "".join(calls), len(calls)


def main(root: Path) -> int:
    if (root / ".git").exists():
        raise SystemExit(f"{root} is a git checkout: run this on a scratch copy only")
    total = 0
    for path in sorted((root / RULES_DIR).glob("*.py")):
        text, n = undecorate(path.read_text(), str(path))
        if n:
            path.write_text(text)
            print(f"{path.relative_to(root)}: {n} rules")
            total += n
    print(f"{total} rules moved")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else ".")))
