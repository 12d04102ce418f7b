"""One object per run folder on object storage that holds the manifests and digests of its windows
(`canning-prof digest` writes it), so that a viewer with no local copy yet fetches them in one request
instead of two per window: each request costs milliseconds of the server and of the client, and a
thousand ranks are two thousand requests.

The pack is only a faster way to the same bytes, never a second truth: `PACK_NAME` in the run folder,
a zip archive whose `index.json` gives, for each file name, the identity (etag and size) of the object
it was copied from, and whose entry of that name holds the file. An entry is used only while the
listing still shows that identity for that object; a manifest or digest rewritten since (or one the
pack does not hold) is fetched on its own. The digests written at the source by each rank work the
same without a pack.
"""
from __future__ import annotations

import json
import logging
import os
import zipfile

from canning_tb.util.manifest import DIGEST_SUFFIX, MANIFEST_SUFFIX

log = logging.getLogger("canning_tb.store")

PACK_NAME = "canning-digests.zip"
FORMAT = "canning-digests"
VERSION = 1
INDEX = "index.json"
# a pack is fetched when it can spare at least this many requests (it holds every window of its folder)
WORTH = 8


def is_pack(rel: str) -> bool:
    return rel.rsplit("/", 1)[-1] == PACK_NAME


def packable(rel: str) -> bool:
    """The small files a viewer needs from the start: the manifests and the digests beside them."""
    return rel.endswith(MANIFEST_SUFFIX) or rel.endswith(DIGEST_SUFFIX)


def tag(info: dict) -> str:
    """The back-end's content tag of a listed object (S3 and Azure: ETag, GCS: md5Hash); "" when none."""
    return str(info.get("ETag") or info.get("etag") or info.get("md5Hash") or info.get("md5") or "")


def _identity(info: dict) -> dict:
    return {"etag": tag(info), "size": info.get("size")}


def write(path: str, files: dict[str, tuple[str, dict]]) -> None:
    """Write a pack of files {name: (local copy, the listing info of the object it is a copy of)}."""
    index = {name: _identity(info) for name, (_, info) in files.items()}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr(INDEX, json.dumps({"format": FORMAT, "version": VERSION, "files": index}))
        for name, (local, _) in sorted(files.items()):
            archive.write(local, name)


def read(path: str, wanted: dict[str, dict], where: str):
    """(name, bytes) of the files among `wanted` {name: listing info} that the pack holds as listed.
    A pack that cannot be read is logged (`where` names it) and gives nothing: the files are then
    fetched one by one."""
    try:
        with zipfile.ZipFile(path) as archive:
            index = _index(archive)
            for name, info in wanted.items():
                ident = _identity(info)
                if ident["etag"] and index.get(name) == ident:
                    data = archive.read(name)
                    if len(data) == ident["size"]:
                        yield name, data
    except (OSError, zipfile.BadZipFile, KeyError, ValueError, RecursionError) as e:
        log.warning("canning: %s: not a readable pack of digests (%s); its files are fetched one by one", where, e)


def _index(archive: zipfile.ZipFile) -> dict:
    data = json.loads(archive.read(INDEX))
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise ValueError(f"{INDEX} is not a {FORMAT} index of version {VERSION}")
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def local_tmp(folder: str) -> str:
    """A hidden file name in folder for a pack on its way."""
    return os.path.join(folder, f".{PACK_NAME}.{os.getpid()}.tmp")
