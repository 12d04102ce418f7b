"""The user's name map (`canning_names.json` in the logdir, docs/http_api.md "Name map"), read for
the comparison: the analysis gets the parsed map, never the file. The file is opened through
safe_files (a regular file inside the logdir: a link to outside is refused, a FIFO never blocks)."""
from __future__ import annotations

import json
import os

from canning_tb.analysis.names import FILE_NAME, NameMap, NameMapError, name_map
from canning_tb.util.safe_files import read_file

MAX_BYTES = 4 << 20  # a map of names and patterns: past this it is not one


def name_map_file(folder: str | None) -> str | None:
    return os.path.join(folder, FILE_NAME) if folder else None


def load_name_map(folder: str | None, path: str | None = None) -> tuple[NameMap, str | None, str | None]:
    """(the map, the file read or None, its problem or None): `path`, else
    `folder`/canning_names.json when it exists; the defaults alone when there is no file; the
    defaults and the problem when the file cannot be used (a bad map never stops a comparison)."""
    root = None if path else folder  # a file the user names is theirs; the logdir's stays inside it
    path = path or name_map_file(folder)
    if not path or not os.path.lexists(path):
        return name_map(), None, None
    try:
        data = read_file(path, MAX_BYTES + 1, root=root)
        if len(data) > MAX_BYTES:
            raise NameMapError(f"larger than {MAX_BYTES >> 20} MiB")
        return name_map(json.loads(data.decode("utf-8"))), path, None
    except OSError as e:
        return name_map(), path, f"cannot read: {e.strerror or e}"
    except (UnicodeDecodeError, json.JSONDecodeError, NameMapError) as e:
        return name_map(), path, str(e)
    except RecursionError:
        return name_map(), path, "nested too deeply to read"
