"""Atomic file writing: every file appears complete, by rename from a temp name readers skip (.name.<pid>.tmp)."""
import gzip
import json
import os

_COUNT_TOKEN = b'"ph":'  # one per Chrome trace event; cheap to count while the bytes stream by
_CHUNK = 1 << 20


def tmp_name(dir_name: str, final: str) -> str:
    return os.path.join(dir_name, f".{final}.{os.getpid()}.tmp")


def is_temp(name: str) -> bool:
    return name.startswith(".") or name.endswith(".tmp")


def publish_gzip(src: str, dst: str, level: int = 6) -> int:
    """Gzip src into dst atomically; returns the number of trace events seen. src is removed."""
    tmp = tmp_name(os.path.dirname(dst), os.path.basename(dst))
    events, tail = 0, b""
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as raw, \
                gzip.GzipFile(filename="", mode="wb", compresslevel=level, fileobj=raw, mtime=0) as fout:
            while chunk := fin.read(_CHUNK):
                data = tail + chunk
                events += data.count(_COUNT_TOKEN)
                tail = chunk[-(len(_COUNT_TOKEN) - 1):]  # too short to hold a token: a split one counts once
                fout.write(chunk)
        os.replace(tmp, dst)
    finally:
        _remove(tmp)
        _remove(src)
    return events


def publish_plain(src: str, dst: str) -> int:
    events, tail = 0, b""
    with open(src, "rb") as f:
        while chunk := f.read(_CHUNK):
            data = tail + chunk
            events += data.count(_COUNT_TOKEN)
            tail = chunk[-(len(_COUNT_TOKEN) - 1):]
    os.replace(src, dst)
    return events


def publish_json(obj, dst: str) -> int:
    data = json.dumps(obj, indent=1, sort_keys=False).encode()
    tmp = tmp_name(os.path.dirname(dst), os.path.basename(dst))
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, dst)
    finally:
        _remove(tmp)
    return len(data)


def tree_bytes(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    total = 0
    for root, _dirs, names in os.walk(path):
        for n in names:
            try:
                total += os.path.getsize(os.path.join(root, n))
            except OSError:
                pass
    return total


def _remove(path: str):
    try:
        os.remove(path)
    except OSError:
        pass

