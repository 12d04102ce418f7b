"""The glossary (analysis/glossary.py): its tips and its markdown against glossary.json read here with json
(issue 46, mutation testing)."""
import json
from pathlib import Path

from canning_tb.analysis import glossary

TABLE = Path(glossary.__file__).with_name("glossary.json")


def test_tip_is_the_tables_tip():
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    for key in ("step_time", next(reversed(table))):
        assert glossary.tip(key) == table[key]["tip"]


def test_markdown_is_the_header_then_one_row_per_entry_in_order():
    """The header's title first, then the table's head and rule, one row per entry (label | tip | `source`),
    in the JSON's order, and one newline at the end."""
    table = json.loads(TABLE.read_text(encoding="utf-8"))
    text = glossary.markdown()
    assert text.startswith("# Glossary: what each figure means\n") and text.endswith("|\n")
    head, rows = text.split("\n| Figure | Definition | Computed by |\n|---|---|---|\n")
    assert head == glossary.HEADER  # the header, then a blank line before the table
    assert rows.split("\n")[:-1] == [f"| {e['label']} | {e['tip']} | `{e['source']}` |" for e in table.values()]
