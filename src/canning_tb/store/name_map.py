"""The user's name map (`canning_names.json` in the logdir, docs/http_api.md "Name map"), read for
the comparison: the analysis gets the parsed map, never the file."""
from __future__ import annotations

import json
import os

from canning_tb.analysis.names import FILE_NAME, NameMap, NameMapError, name_map


def load_name_map(folder: str | None, path: str | None = None) -> tuple[NameMap, str | None, str | None]:
    """(the map, the file read or None, its problem or None): `path`, else
    `folder`/canning_names.json when it exists; the defaults alone when there is no file; the
    defaults and the problem when the file cannot be used (a bad map never stops a comparison)."""
    path = path or (os.path.join(folder, FILE_NAME) if folder else None)
    if not path or not os.path.isfile(path):
        return name_map(), None, None
    try:
        with open(path, encoding="utf-8") as f:
            return name_map(json.load(f)), path, None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, NameMapError) as e:
        return name_map(), path, str(e)
    except RecursionError:
        return name_map(), path, "nested too deeply to read"
