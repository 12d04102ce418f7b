"""A pickle loaded as plain data only: every global is refused, so nothing in the file can run code.

`pickle.load` on a file from someone's logdir runs whatever callable the file names (GLOBAL, STACK_GLOBAL,
INST, OBJ and the copyreg extension codes all resolve a name through `find_class`, REDUCE / BUILD / NEWOBJ then
call it). Here `find_class` raises for every name, and `persistent_load` too (no persistent ids), so the only
objects a load can make are the ones the opcodes make themselves: dicts, lists, tuples, sets, str, bytes, int,
float, bool and None. Out-of-band buffers (protocol 5) are not given, so NEXT_BUFFER fails too.

Limits are the other readers': the file's bytes are read through safe_files (a regular file inside the logdir,
within its read deadline) and capped by `CANNING_MAX_TRACE_BYTES` (ingest/_json.py: `expansion_cap`).
"""
from __future__ import annotations

import io
import pickle

from canning_tb.util.safe_files import read_file

from .._json import _size_text, expansion_cap
from ..table import InputError


class Refused(pickle.UnpicklingError):
    """The pickle names something that is not plain data."""


class PlainUnpickler(pickle.Unpickler):
    """pickle.Unpickler that makes plain data only (module doc)."""

    def find_class(self, module, name):  # noqa: D401 - pickle's hook
        raise Refused(f"names the global {str(module)[:80]}.{str(name)[:80]} (code, not data): refused, nothing was run")

    def persistent_load(self, pid):
        raise Refused("holds a persistent id (not plain data): refused")


def loads_plain(data: bytes, path: str):
    """The object the pickle bytes hold; InputError naming `path` for anything but a plain-data pickle."""
    try:
        return PlainUnpickler(io.BytesIO(data)).load()
    except Refused as e:
        raise InputError(path, f"not a memory snapshot: the pickle {e}") from None
    except RecursionError:
        raise InputError(path, "not a memory snapshot: the pickle is nested too deep") from None
    except MemoryError:
        raise InputError(path, "not a memory snapshot: the pickle needs more memory than there is") from None
    except Exception as e:  # UnpicklingError, EOFError, ValueError, KeyError (bad memo), OverflowError ...
        what = str(e)[:200] or type(e).__name__
        raise InputError(path, f"damaged or not a pickle: {what}") from None


def load_plain(path: str):
    """Read `path` (safe_files, capped) and load it as plain data."""
    cap = expansion_cap()
    try:
        data = read_file(path, cap + 1)
    except OSError as e:
        raise InputError(path, f"cannot open: {e.strerror or e}") from None
    if len(data) > cap:
        raise InputError(path, f"is larger than the {_size_text(cap)} cap on one file "
                               f"(set CANNING_MAX_TRACE_BYTES to read bigger files)")
    if not data:
        raise InputError(path, "is empty: not a memory snapshot")
    if data[0] != 0x80:
        raise InputError(path, f"not a memory snapshot: starts with bytes {data[:8].hex(' ')}, not a pickle")
    return loads_plain(data, path)
