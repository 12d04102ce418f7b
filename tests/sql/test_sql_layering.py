"""canning_tb/sql is a front door: only the other front doors (cli, mcp) and the package's own `canning_tb.open`
import it, and it imports no front door itself (the one-way design, read with the import graph of tests/design)."""
from test_import_cycles import package_graph


def test_only_front_doors_import_sql():
    graph = package_graph()
    importers = {package for package, deps in graph.items() if "canning_tb.sql" in deps}
    # (canning_tb's own __init__, the parent package, is not an edge of the graph: `canning_tb.open` imports it)
    assert importers == {"canning_tb.cli", "canning_tb.mcp"}
    assert not graph["canning_tb.sql"] & {"canning_tb.plugin", "canning_tb.mcp", "canning_tb.cli"}
    assert graph["canning_tb.sql"] <= {"canning_tb.store", "canning_tb.queries", "canning_tb.analysis",
                                       "canning_tb.ingest", "canning_tb.util"}
