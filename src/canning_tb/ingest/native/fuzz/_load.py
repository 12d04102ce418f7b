"""What every target shares: its sanitized module, from the folder build.compile_all wrote."""
import importlib
import os
import sys

import numpy as np


def module(name: str):
    """The module `_name` built with the sanitizers (never the installed one, which has no checks)."""
    sys.path.insert(0, os.environ["CANNING_FUZZ_BUILD"])
    got = importlib.import_module("_" + name)
    assert os.path.dirname(got.__file__) == os.environ["CANNING_FUZZ_BUILD"], got.__file__
    return got


def exact(data: bytes) -> np.ndarray:
    """The bytes in a buffer of exactly their size: bytes keep a NUL past the end, which would hide a read
    one byte past it from ASan."""
    return np.frombuffer(data, np.uint8).copy()
