"""mcp/terms.py's glossary(): which entry of analysis/glossary.json an answer's figure field carries (issue 46: fast
tests for a mutation run over terms.py). The entries are read from glossary.json with json here, and the tables
given to glossary() are made by hand, so the expected answers do not come from the module's own tables."""

from canning_tb.mcp import terms
from _answers import entry, GLOSSARY



def test_each_field_carries_its_terms_name_and_definition():
    assert terms.glossary({"wait_ns": "wait", "flops": "model_flops"}) == {
        "wait_ns": entry("wait"), "flops": entry("model_flops")}
    assert terms.glossary() == {} and terms.glossary({}) == {}


def test_a_term_the_glossary_does_not_have_is_left_out():
    assert "no_such_term" not in GLOSSARY
    assert terms.glossary({"x_ns": "no_such_term", "wait_ns": "wait"}) == {"wait_ns": entry("wait")}
    assert terms.glossary({"x_ns": "no_such_term"}) == {}


def test_the_first_table_naming_a_field_wins():
    got = terms.glossary({"total_ns": "comm_total"}, {"total_ns": "kernel_total", "max_ns": "kernel_max"})
    assert got == {"total_ns": entry("comm_total"), "max_ns": entry("kernel_max")}
    got = terms.glossary({"total_ns": "kernel_total"}, {"total_ns": "comm_total"}, {"total_ns": "step_time"})
    assert got == {"total_ns": entry("kernel_total")}


def test_a_field_whose_first_term_is_unknown_takes_the_next_tables_known_one():
    assert terms.glossary({"total_ns": "no_such_term"}, {"total_ns": "comm_total"}) == {
        "total_ns": entry("comm_total")}


def test_every_term_the_tools_name_is_in_the_glossary():
    """A table's term missing from glossary.json would leave its field without a definition, silently."""
    for table in (terms.BREAKDOWN, terms.FIGURES, terms.DEVICES, terms.OPERATORS, terms.KERNELS, terms.MEMORY,
                  terms.COMMUNICATION, terms.RANKS, terms.EFFICIENCY):
        assert set(table.values()) <= set(GLOSSARY), set(table.values()) - set(GLOSSARY)
