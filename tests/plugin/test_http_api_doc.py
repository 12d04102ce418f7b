"""docs/http_api.md names every route the plugin serves, and no route it does not serve."""
import re

from tensorboard.plugins import base_plugin

from conftest import REPO

from canning_tb.plugin.plugin import CanningPlugin

DOC = REPO / "docs" / "http_api.md"


def documented_routes(text: str) -> set[str]:
    """The routes of the "## GET /route" (or "## POST /route") headings (sub-headings with a query are variants)."""
    return set(re.findall(r"^## (?:GET|POST) (/[A-Za-z0-9_.]+)\s*$", text, flags=re.MULTILINE))


def test_every_route_is_documented():
    served = set(CanningPlugin(base_plugin.TBContext(logdir=None)).get_plugin_apps())
    assert served and documented_routes(DOC.read_text(encoding="utf-8")) == served


def test_the_heading_reader():
    text = "## GET /runs\n### GET /operators?detail=X\n## GET /memory_range\n## Conventions\n"
    assert documented_routes(text) == {"/runs", "/memory_range"}
