"""Warnings that point at the user's line: the first frame outside canning's own packages.

A fixed stacklevel is wrong as soon as the call path changes (ps.Profile, ps.profile, ps.start, a
context manager's __enter__): it then names a frame of ours, or one above the user's (`sys:1`).
"""
import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../canning_tb
_OURS = (_PACKAGE + os.sep, os.path.join(os.path.dirname(_PACKAGE), "canning") + os.sep)  # and the `canning` facade


def user_stacklevel() -> int:
    """warn_user's stacklevel for the first frame not in our packages."""
    frame, level = sys._getframe(2), 2  # seen from warn_user: 1 is warn_user, 2 its caller
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_OURS):
        frame, level = frame.f_back, level + 1
    return level


def warn_user(message: str, category=RuntimeWarning) -> None:
    warnings.warn(message, category, stacklevel=user_stacklevel())
