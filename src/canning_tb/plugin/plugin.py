"""The TensorBoard plugin: routes only (parse request -> store call -> JSON).

Routes (under /data/plugin/canning/):
  /index.js        the built frontend bundle (one ES module exporting render())
  /runs            every run with its workers and windows, and a `loading` flag
  /overview        \
  /operators       |  one section of the window's digest as JSON, for
  /kernels         |  ?run=&worker=&window= (+ group_by=name|shape|stack on /operators)
  /memory          |
  /communication   /
  /cluster         the cross-rank analysis (analysis/cluster.py) of the windows at the same
                   position in every worker of ?run= (the position of ?worker=&window=, or ?window_index=)
Integers stay numbers; times are integer nanoseconds relative to the window start (fields end
in `_ns`; -1 stays -1 = absent). Errors are JSON `{"error": ...}`: 400 missing parameter,
404 unknown run/worker/window, 422 unreadable input ("<file>: <problem>"), 503 still discovering.
Request strings are only ever looked up among the discovered ids, never joined into a path.
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time

from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from .loader import normalize_logdir

log = logging.getLogger("canning_tb.plugin")

PLUGIN_NAME = "canning"
TAB_NAME = "Canning Profiler"
_STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
_MISSING_BUNDLE_JS = b"""// canning: the frontend bundle is not built.
export function render() {
  const p = document.createElement("p");
  p.id = "canning-root";
  p.dataset.state = "error";
  p.style.cssText = "font-family: system-ui, sans-serif; padding: 16px; color: #c62828";
  p.textContent = "The Canning Profiler frontend is not built. Run: cd frontend && npm ci && npm run build";
  document.body.appendChild(p);
}
"""
GROUPS = {"name": "ops_by_name", "shape": "ops_by_shape", "stack": "ops_by_stack"}


def _load_store_class():
    try:
        from canning_tb.store import Store  # type: ignore[attr-defined]
    except ImportError:
        from canning_tb.store.store import Store
    return Store


def _input_error_class():
    from canning_tb.ingest import InputError

    return InputError


# -- protobuf -> JSON -----------------------------------------------------------------------------


def _is_repeated(field) -> bool:
    rep = getattr(field, "is_repeated", None)
    if rep is not None:
        return bool(rep() if callable(rep) else rep)
    return field.label == field.LABEL_REPEATED


def _scalar(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def to_json(msg) -> dict:
    """Every field of a message (defaults included), ints as JSON numbers, names as in the .proto."""
    out = {}
    for field in msg.DESCRIPTOR.fields:
        value = getattr(msg, field.name)
        mt = field.message_type
        if mt is not None and mt.GetOptions().map_entry:
            vf = mt.fields_by_name["value"]
            out[field.name] = {k: (to_json(v) if vf.message_type is not None else _scalar(v)) for k, v in value.items()}
        elif _is_repeated(field):
            out[field.name] = [to_json(v) for v in value] if mt is not None else [_scalar(v) for v in value]
        elif mt is not None:
            out[field.name] = to_json(value)
        else:
            out[field.name] = _scalar(value)
    return out


def _rel(t: int, t0: int) -> int:
    return t - t0 if t >= 0 else t  # -1 means absent and stays so


# -- discovery ------------------------------------------------------------------------------------


class _Discovery:
    """Owns the Store. Discovery runs in a background thread, at most every `interval` seconds,
    so `is_active()` and `/runs` never wait on a big logdir; they read the last snapshot."""

    def __init__(self, logdir: str | None, interval: float, store_factory=None):
        self.logdir = logdir
        self.interval = interval
        self._factory = store_factory
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._last = -math.inf
        self._first = threading.Event()
        self.store = None
        self.snapshot: dict | None = None  # {"runs": [...]} of the last finished scan
        self.error: str | None = None

    @property
    def loading(self) -> bool:
        return not self._first.is_set() or (self._thread is not None and self._thread.is_alive())

    def kick(self) -> None:
        """Start a scan unless one runs or the last ended less than `interval` seconds ago."""
        if not self.logdir:
            self._first.set()
            return
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            if time.monotonic() - self._last < self.interval:
                return
            self._thread = threading.Thread(target=self._scan, name="canning-discovery", daemon=True)
            self._thread.start()

    def wait_first(self, timeout: float) -> bool:
        return self._first.wait(timeout)

    def _scan(self) -> None:
        try:
            if self.store is None:
                factory = self._factory or _load_store_class()
                self.store = factory(self.logdir)  # the constructor scans once
            else:
                self.store.refresh()
            self.snapshot = self._listing(self.store)
            self.error = None
        except Exception as e:  # never let discovery take TensorBoard down
            log.exception("canning: discovery of %s failed", self.logdir)
            self.error = f"discovery of the logdir failed: {type(e).__name__}: {e}"
        finally:
            self._last = time.monotonic()
            self._first.set()

    def _listing(self, store) -> dict:
        runs = []
        for run in store.runs():
            try:
                workers = []
                for w in store.workers(run):
                    windows = []
                    for win in store.windows(run, w.name):
                        windows.append({
                            "id": win.id,
                            "label": win.label,
                            "format": win.format,
                            "status": win.status,
                            "files": [os.path.basename(f) for f in win.files],
                        })
                    workers.append({"name": w.name, "rank": w.rank, "windows": windows})
            except KeyError:  # the run vanished between runs() and workers()
                continue
            runs.append({"name": run, "workers": workers})
        return {"runs": runs}


# -- the plugin -----------------------------------------------------------------------------------


class _HTTPError(Exception):
    def __init__(self, code: int, message: str, **extra):
        super().__init__(message)
        self.code = code
        self.body = {"error": message, **extra}


class CanningPlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context, *, refresh_interval: float = 5.0, store_factory=None):
        flags = getattr(context, "flags", None)
        self._logdir = normalize_logdir(getattr(context, "logdir", None), flags)
        self._discovery = _Discovery(self._logdir, refresh_interval, store_factory)
        self._digest_locks: dict[tuple, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._discovery.kick()  # start looking now, in the background

    # TensorBoard API ------------------------------------------------------------------------
    def get_plugin_apps(self):
        return {
            "/index.js": self._serve_js,
            "/runs": self._serve_runs,
            "/overview": self._section(self._overview),
            "/operators": self._section(self._operators),
            "/kernels": self._section(self._kernels),
            "/memory": self._section(self._memory),
            "/communication": self._section(self._communication),
            "/cluster": self._serve_cluster,
        }

    def is_active(self) -> bool:
        """Cheap: reads the last discovery snapshot. While the very first scan of a big logdir
        is still running (after a short wait), the tab is shown and says it is loading."""
        d = self._discovery
        d.kick()
        if not d.wait_first(0.5):
            return True
        if d.snapshot is None:
            return False
        return bool(d.snapshot["runs"])

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name=TAB_NAME, disable_reload=False)

    # routes ---------------------------------------------------------------------------------
    @wrappers.Request.application
    def _serve_js(self, request):
        path = os.path.join(_STATIC, "index.js")
        try:
            with open(path, "rb") as f:
                body = f.read()
        except OSError:
            log.warning("canning: %s missing; build it with: cd frontend && npm ci && npm run build", path)
            body = _MISSING_BUNDLE_JS
        return http_util.Respond(request, body, "text/javascript")

    @wrappers.Request.application
    def _serve_runs(self, request):
        d = self._discovery
        d.kick()
        if d.snapshot is None:
            d.wait_first(2.0)
        snap = d.snapshot or {"runs": []}
        body = {
            "logdir": self._logdir,
            "loading": d.loading,
            "error": d.error,
            "runs": snap["runs"],
        }
        return http_util.Respond(request, body, "application/json")

    def _section(self, fn):
        @wrappers.Request.application
        def app(request):
            try:
                body = fn(request, *self._lookup(request))
                code = 200
            except _HTTPError as e:
                body, code = e.body, e.code
            except Exception as e:  # a bug must show as text in the UI, not as a dead view
                log.exception("canning: %s failed", request.path)
                body, code = {"error": f"internal error: {type(e).__name__}: {e}"}, 500
            return http_util.Respond(request, body, "application/json", code=code)

        return app

    def _lookup(self, request):
        """(run, worker, window id, digest) for the request, or an _HTTPError."""
        args = request.args
        missing = [p for p in ("run", "worker", "window") if not args.get(p)]
        if missing:
            raise _HTTPError(400, f"missing parameter: {', '.join(missing)}")
        run, worker, window = args["run"], args["worker"], args["window"]
        d = self._discovery
        if d.store is None:
            d.kick()
            d.wait_first(5.0)
            if d.store is None:
                raise _HTTPError(503, d.error or "still discovering the profiles under the logdir", loading=True)
        store = d.store
        # ids are looked up among the discovered ones only (never turned into paths)
        try:
            if run not in store.runs():
                raise KeyError(run)
            if worker not in {w.name for w in store.workers(run)}:
                raise KeyError(worker)
            if window not in {w.id for w in store.windows(run, worker)}:
                raise KeyError(window)
        except KeyError:
            raise _HTTPError(404, f"unknown run/worker/window: {run!r} / {worker!r} / {window!r}") from None
        return run, worker, window, self._digest(store, run, worker, window)

    def _store(self):
        d = self._discovery
        if d.store is None:
            d.kick()
            d.wait_first(5.0)
            if d.store is None:
                raise _HTTPError(503, d.error or "still discovering the profiles under the logdir", loading=True)
        return d.store

    def _digest(self, store, run, worker, window):
        key = (run, worker, window)
        with self._locks_lock:
            lock = self._digest_locks.setdefault(key, threading.Lock())
        InputError = _input_error_class()
        with lock:  # one computation per window, however many requests ask for it
            try:
                return store.digest(run, worker, window)
            except KeyError:
                raise _HTTPError(404, f"unknown run/worker/window: {run!r} / {worker!r} / {window!r}") from None
            except InputError as e:
                raise _HTTPError(422, self._error_text(e), file=self._short(e.file)) from None

    def _short(self, path: str) -> str:
        if self._logdir and path and os.path.isabs(path):
            try:
                rel = os.path.relpath(path, self._logdir)
                if not rel.startswith(".."):
                    return rel.replace(os.sep, "/")
            except ValueError:
                pass
        return path

    def _error_text(self, e) -> str:
        return f"{self._short(e.file)}: {e.problem}"

    # sections of the digest -------------------------------------------------------------------
    def _head(self, run, worker, window, digest) -> dict:
        w = digest.window
        info = to_json(w)
        info["duration_ns"] = max(0, w.end_ns - w.start_ns) if w.end_ns >= 0 and w.start_ns >= 0 else -1
        return {
            "run": run,
            "worker": worker,
            "window": window,
            "info": info,
            "problems": [{**to_json(p), "file": self._short(p.file)} for p in digest.problems],
        }

    def _overview(self, request, run, worker, window, digest):
        t0 = digest.window.start_ns
        steps = []
        for s in digest.steps:
            j = to_json(s)
            j["start_ns"] = _rel(s.start_ns, t0)
            steps.append(j)
        return {
            **self._head(run, worker, window, digest),
            "schema_version": digest.schema_version,
            "steps": steps,
            "average": to_json(digest.average),
            "scalars": {k: _scalar(v) for k, v in digest.scalars.items()},
            "rule_hits": [to_json(r) for r in digest.rule_hits],
        }

    def _operators(self, request, run, worker, window, digest):
        group_by = request.args.get("group_by", "name")
        if group_by not in GROUPS:
            raise _HTTPError(400, f"group_by must be one of {', '.join(GROUPS)}, not {group_by!r}")
        rows = [to_json(o) for o in getattr(digest, GROUPS[group_by])]
        has_device = any(r["device_total_ns"] > 0 or r["device_self_ns"] > 0 for r in rows)
        return {
            **self._head(run, worker, window, digest),
            "group_by": group_by,
            "has_device": has_device,
            "has_stacks": len(digest.ops_by_stack) > 0,
            "rows": rows,
        }

    def _kernels(self, request, run, worker, window, digest):
        return {
            **self._head(run, worker, window, digest),
            "kernels_by_name": [to_json(k) for k in digest.kernels_by_name],
            "kernels_by_op": [to_json(k) for k in digest.kernels_by_op],
            "cores": [to_json(c) for c in digest.cores],
        }

    def _memory(self, request, run, worker, window, digest):
        t0 = digest.window.start_ns
        devices = []
        for m in digest.memory:
            j = to_json(m)
            j["curve_ts_ns"] = [_rel(t, t0) for t in m.curve_ts_ns]
            j["peak_ts_ns"] = _rel(m.peak_ts_ns, t0)
            for ev in j["events"]:
                ev["alloc_ns"] = _rel(ev["alloc_ns"], t0)
                ev["free_ns"] = _rel(ev["free_ns"], t0)
            devices.append(j)
        return {**self._head(run, worker, window, digest), "devices": devices}

    def _communication(self, request, run, worker, window, digest):
        t0 = digest.window.start_ns
        comm = to_json(digest.communication)
        for c in comm["calls"]:
            c["start_ns"] = _rel(c["start_ns"], t0)
        return {**self._head(run, worker, window, digest), "communication": comm}

    # cross-rank ------------------------------------------------------------------------------
    @wrappers.Request.application
    def _serve_cluster(self, request):
        try:
            body, code = self._cluster(request), 200
        except _HTTPError as e:
            body, code = e.body, e.code
        except Exception as e:
            log.exception("canning: %s failed", request.path)
            body, code = {"error": f"internal error: {type(e).__name__}: {e}"}, 500
        return http_util.Respond(request, body, "application/json", code=code)

    def _cluster(self, request):
        """analyse_ranks over the window at the same position of every worker of the run.
        Windows that cannot be read are left out and listed in `problems`."""
        from canning_tb.analysis.cluster import analyse_ranks

        args = request.args
        run = args.get("run")
        if not run:
            raise _HTTPError(400, "missing parameter: run")
        store = self._store()
        try:
            if run not in store.runs():
                raise KeyError(run)
            workers = store.workers(run)
        except KeyError:
            raise _HTTPError(404, f"unknown run: {run!r}") from None
        if args.get("window_index") not in (None, ""):
            try:
                index = int(args["window_index"])
            except ValueError:
                raise _HTTPError(400, f"window_index must be an integer, not {args['window_index']!r}") from None
        elif args.get("worker") and args.get("window"):
            ids = None
            for w in workers:
                if w.name == args["worker"]:
                    ids = [x.id for x in store.windows(run, w.name)]
            if ids is None or args["window"] not in ids:
                raise _HTTPError(404, f"unknown run/worker/window: {run!r} / {args['worker']!r} / {args['window']!r}")
            index = ids.index(args["window"])
        else:
            raise _HTTPError(400, "missing parameter: window_index (or worker and window)")
        members, digests, problems = [], [], []
        for w in workers:
            wins = store.windows(run, w.name)
            if not 0 <= index < len(wins):
                continue
            win = wins[index]
            try:
                d = self._digest(store, run, w.name, win.id)
            except _HTTPError as e:
                problems.append({"worker": w.name, "window": win.id, "message": e.body["error"]})
                continue
            members.append({"worker": w.name, "rank": w.rank, "window": win.id, "digest_rank": int(d.window.rank)})
            digests.append(d)
        if not digests:
            raise _HTTPError(404, f"no readable window at position {index} in run {run!r}", problems=problems)
        result = analyse_ranks(digests)
        return {"run": run, "window_index": index, "workers": members, "problems": problems, **result}
