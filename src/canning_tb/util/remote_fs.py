"""Logdirs on object storage and shared file systems (s3://, gs://, hdfs://, az://...) through fsspec's
own back-ends, for the handler (writing windows) and the store (reading them).

Light on purpose (fsspec is imported on first use): the training side and the viewer side both import
it. Credentials and endpoints come from the back-end's usual configuration (for S3: the AWS environment
and config files, `AWS_ENDPOINT_URL` for S3-compatible stores); no message built here carries a secret.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import socket

log = logging.getLogger("canning_tb.remote")

_URL_RE = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
# the extra that installs each back-end (pyproject.toml)
_EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure", "abfss": "azure",
           "adl": "azure", "hdfs": "hdfs"}
_SECRET_ENV = re.compile(r"SECRET|TOKEN|PASSWORD|CREDENTIAL|ACCOUNT_KEY|SAS", re.I)


class RemoteError(OSError):
    """A remote logdir that cannot be reached or used: the message says why, without secrets."""


class RemoteNotFound(RemoteError):
    """No such bucket or path."""


def is_url(path) -> bool:
    """A URL of a remote file system (file:// is a local path)."""
    found = _URL_RE.match(str(path or ""))
    return bool(found) and found.group("scheme").lower() != "file"


def scheme(url: str) -> str:
    found = _URL_RE.match(url)
    return found.group("scheme").lower() if found else ""


_USERINFO_RE = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")


def scrub(text: str) -> str:
    """text without the value of any secret in the environment (keys, tokens, passwords), nor the
    user:password@ part of a URL."""
    text = _USERINFO_RE.sub(r"\g<scheme>***@", text)
    for name, value in os.environ.items():
        if value and len(value) >= 6 and _SECRET_ENV.search(name):
            text = text.replace(value, "***")
    return text


def open_fs(url: str):
    """(file system, root path inside it) of a URL; RemoteError when its back-end is not installed."""
    extra = _EXTRAS.get(scheme(url), "remote")
    try:
        import fsspec
        fs, root = fsspec.core.url_to_fs(url, skip_instance_cache=True)
    except ImportError as e:
        raise RemoteError(f"{scrub(url)}: the {scheme(url)}:// back-end of fsspec is not installed ({e}); "
                          f"install it with: pip install 'canning-tb[{extra}]'") from None
    except ValueError as e:  # fsspec knows no such protocol
        raise RemoteError(scrub(f"{url}: {e}")) from None
    return fs, root.rstrip("/")


def explain(url: str, err: BaseException) -> RemoteError:
    """A clear message for a failed call on a remote logdir."""
    if isinstance(err, RemoteError):
        return err
    if isinstance(err, FileNotFoundError):
        return RemoteNotFound(scrub(f"{url}: no such bucket or path"))
    if isinstance(err, PermissionError):
        why = ("access denied: check the credentials and the endpoint (for s3://: AWS_ACCESS_KEY_ID, "
               "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ~/.aws/credentials, AWS_ENDPOINT_URL)")
    else:
        why = f"{type(err).__name__}: {err}"
    return RemoteError(scrub(f"{url}: {why}"))


def call(url: str, fn, *args, **kwargs):
    """fn(*args) on a remote file system, its failure as a RemoteError. Back-ends raise their own
    types (botocore, aiohttp, google-auth, pyarrow) besides OSError: this is the network boundary."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # network boundary: every failure becomes one clear message, traceback logged
        log.debug("canning: %s failed on %s", getattr(fn, "__name__", fn), url, exc_info=True)
        raise explain(url, e) from None


def temp_key(path: str) -> str:
    """A hidden temporary name beside path (readers and discovery skip it)."""
    folder, name = path.rsplit("/", 1) if "/" in path else ("", path)
    tmp = f".{name}.{socket.gethostname()}.{os.getpid()}.tmp"
    return f"{folder}/{tmp}" if folder else tmp


def put_atomic(fs, local: str, remote: str) -> None:
    """Upload a file or a folder under a temporary key, then move it to `remote`: no reader sees it half."""
    tmp = temp_key(remote)
    folder = os.path.isdir(local)
    try:
        fs.put(local, tmp, recursive=folder)
        fs.mv(tmp, remote, recursive=folder)
    except BaseException:
        try:
            if fs.exists(tmp):
                fs.rm(tmp, recursive=folder)
        except Exception:  # network boundary: the first failure is the one to report
            log.debug("canning: could not remove %s", tmp, exc_info=True)
        raise


def join(url: str, *names: str) -> str:
    return "/".join([url.rstrip("/"), *names])


def remove_local(folder: str, names) -> None:
    """Remove staged files (and folders) once they are uploaded."""
    for name in names:
        path = os.path.join(folder, name)
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.exists(path):
            os.remove(path)
