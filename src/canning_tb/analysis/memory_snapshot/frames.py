"""A stack's top user frame: the innermost frame of the user's own code, not of torch, torch_npu, another
installed package, the standard library or an import shim ("<frozen runpy>")."""
from __future__ import annotations

import re

from canning_tb.ingest.snapshot.model import Snapshot

_LIBRARY = re.compile(r"([\\/](site|dist)-packages[\\/])|([\\/]lib[\\/]python\d[\d.]*[\\/])|(^<.*>$)|(^\?$)")


def user_frames(s: Snapshot) -> list[bool]:
    """Per frame id: True when it is the user's code."""
    return [not _LIBRARY.search(f) for f in s.frame_file]


def top_user_frame(s: Snapshot, stack_id: int, user: list[bool]) -> int:
    """The frame id of the stack's innermost user frame; its innermost frame when none is the user's; -1 for
    no stack."""
    if stack_id < 0:
        return -1
    ids = s.stack_frames[s.stack_offsets[stack_id]:s.stack_offsets[stack_id + 1]]
    for f in ids:
        if user[f]:
            return int(f)
    return int(ids[0]) if len(ids) else -1


def top_user_frames(s: Snapshot, stack_ids, user: list[bool] | None = None) -> list[int]:
    user = user if user is not None else user_frames(s)
    cache: dict[int, int] = {}
    out = []
    for sid in stack_ids:
        sid = int(sid)
        if sid not in cache:
            cache[sid] = top_user_frame(s, sid, user)
        out.append(cache[sid])
    return out


def frame_text(s: Snapshot, frame_id: int) -> str:
    return s.frame_text(frame_id) if frame_id >= 0 else "(no stack recorded)"


def stack_text(s: Snapshot, stack_id: int, limit: int = 16) -> list[str]:
    """The stack's frames as text, innermost first, at most `limit`."""
    if stack_id < 0:
        return []
    ids = s.stack_frames[s.stack_offsets[stack_id]:s.stack_offsets[stack_id + 1]][:limit]
    return [s.frame_text(int(f)) for f in ids]
