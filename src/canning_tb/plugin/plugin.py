"""The TensorBoard plugin: routes only (parse request -> store call -> JSON).

Routes (under /data/plugin/canning/):
  /index.js        the built frontend bundle (one ES module exporting render())
  /runs            every run with its workers and windows, and a `loading` flag
  /overview        \
  /operators       |  one section of the window's digest as JSON, for
  /kernels         |  ?run=&worker=&window= (+ group_by=name|shape|stack on /operators)
  /memory          |
  /communication   /
  /memory_range    ?run=&worker=&window=&device=[&start_ns=&end_ns=]: the allocations of one
                   device in a range (relative ns) and what each operator allocated there
  /operators?detail=<name>[&shapes=]  one operator's call stacks (ops_by_stack rows of that name)
                   and the kernels it launched, for the expandable rows of the Operators view
  /cluster         the cross-rank analysis (analysis/cluster.py) of the windows at the same
                   position in every worker of ?run= (the position of ?worker=&window=, or ?window_index=),
                   with per-rank figures selected from the digests (`per_rank`, `run_summary`).
                   The windows are first digested in parallel processes (Store.prefetch) in a
                   background thread; while that runs the answer is 202 {loading, done, total}.
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

from canning_tb.analysis.memory_range import memory_range  # digest_pb2 only: light at TensorBoard start
from canning_tb.analysis.summary import has_device_work, kernel_total_ns, window_figures

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
ISOLATE_BYTES = 16 << 20  # windows whose files exceed this are digested in a child process
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


def _scalar(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def to_json(msg) -> dict:
    """Every field of a message (defaults included), ints as JSON numbers, names as in the .proto."""
    from canning_tb.digest_json import to_plain  # protobuf only: stays light at TensorBoard start
    return to_plain(msg)


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
                # the constructor scans once; big windows are parsed in a child process so
                # TensorBoard keeps serving (GIL) and does not keep the parse's peak memory
                self.store = (factory(self.logdir, isolate_bytes=ISOLATE_BYTES) if self._factory is None
                              else factory(self.logdir))
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


def _unknown_window(run: str, worker: str, window: str) -> _HTTPError:
    return _HTTPError(404, f"unknown run/worker/window: {run!r} / {worker!r} / {window!r}")


class CanningPlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context, *, refresh_interval: float = 5.0, store_factory=None):
        flags = getattr(context, "flags", None)
        self._logdir = normalize_logdir(getattr(context, "logdir", None), flags)
        self._discovery = _Discovery(self._logdir, refresh_interval, store_factory)
        self._digest_locks: dict[tuple, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        # (run, window index) -> {"thread", "done", "total", "items"}: one prefetch at a time each
        self._prefetches: dict[tuple, dict] = {}
        self._prefetch_lock = threading.Lock()
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
            "/memory_range": self._section(self._memory_range),
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

    @staticmethod
    def _answer(request, call):
        """JSON of call()'s (body, code); an _HTTPError as its own body and code."""
        try:
            body, code = call()
        except _HTTPError as e:
            body, code = e.body, e.code
        except Exception as e:  # a bug must show as text in the UI, not as a dead view
            log.exception("canning: %s failed", request.path)
            body, code = {"error": f"internal error: {type(e).__name__}: {e}"}, 500
        return http_util.Respond(request, body, "application/json", code=code)

    def _section(self, fn):
        @wrappers.Request.application
        def app(request):
            return self._answer(request, lambda: (fn(request, *self._lookup(request)), 200))

        return app

    def _lookup(self, request):
        """(run, worker, window id, digest) for the request, or an _HTTPError."""
        args = request.args
        missing = [p for p in ("run", "worker", "window") if not args.get(p)]
        if missing:
            raise _HTTPError(400, f"missing parameter: {', '.join(missing)}")
        run, worker, window = args["run"], args["worker"], args["window"]
        store = self._store()
        # ids are looked up among the discovered ones only (never turned into paths)
        try:
            if run not in store.runs():
                raise KeyError(run)
            if worker not in {w.name for w in store.workers(run)}:
                raise KeyError(worker)
            if window not in {w.id for w in store.windows(run, worker)}:
                raise KeyError(window)
        except KeyError:
            raise _unknown_window(run, worker, window) from None
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
                raise _unknown_window(run, worker, window) from None
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
            "figures": window_figures(digest),
        }

    def _operators(self, request, run, worker, window, digest):
        if "detail" in request.args:
            return self._operator_detail(request, run, worker, window, digest)
        group_by = request.args.get("group_by", "name")
        if group_by not in GROUPS:
            raise _HTTPError(400, f"group_by must be one of {', '.join(GROUPS)}, not {group_by!r}")
        rows = [to_json(o) for o in getattr(digest, GROUPS[group_by])]
        has_device = has_device_work(digest)
        return {
            **self._head(run, worker, window, digest),
            "group_by": group_by,
            "has_device": has_device,
            "has_stacks": len(digest.ops_by_stack) > 0,
            "rows": rows,
        }

    def _operator_detail(self, request, run, worker, window, digest):
        """One operator: the ops_by_stack rows of its name (and input shapes, where those rows
        carry them) and the kernels it launched (the `kernels` of its ops_by_name / ops_by_shape row)."""
        name = request.args.get("detail", "")
        shapes = request.args.get("shapes")
        source = digest.ops_by_name if shapes is None else digest.ops_by_shape
        op = next((o for o in source if o.name == name and (shapes is None or o.input_shapes == shapes)), None)
        if op is None:
            raise _HTTPError(404, f"unknown operator: {name!r}" + ("" if shapes is None else f" with input shapes {shapes!r}"))
        stacks = [o for o in digest.ops_by_stack if o.name == name]
        by_shape = shapes is not None and any(o.input_shapes for o in stacks)
        if by_shape:
            stacks = [o for o in stacks if o.input_shapes == shapes]
        return {
            "run": run, "worker": worker, "window": window,
            "name": name,
            "input_shapes": shapes,
            "stacks_by_shape": by_shape,  # False: the digest groups stacks by name only
            "calls": op.calls,
            "stacks": [{k: v for k, v in to_json(o).items() if k != "kernels"} for o in stacks],
            "kernels": [to_json(k) for k in op.kernels],
        }

    def _kernels(self, request, run, worker, window, digest):
        return {
            **self._head(run, worker, window, digest),
            "kernels_by_name": [to_json(k) for k in digest.kernels_by_name],
            "total_ns": kernel_total_ns(digest),
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

    def _memory_range(self, request, run, worker, window, digest):
        t0 = digest.window.start_ns
        bounds = [_int_arg(request, key) for key in ("start_ns", "end_ns")]
        if None not in bounds and bounds[0] > bounds[1]:
            raise _HTTPError(400, f"start_ns ({bounds[0]}) is after end_ns ({bounds[1]})")
        name = request.args.get("device", "")
        mem = next((m for m in digest.memory if m.device == name), None)
        if mem is None:
            raise _HTTPError(404, f"unknown device: {name!r}")
        start, end = (None if b is None else b + t0 for b in bounds)
        found = memory_range(mem, start, end)
        events = []
        for ev in found["events"]:
            j = to_json(ev)
            j["alloc_ns"], j["free_ns"] = _rel(ev.alloc_ns, t0), _rel(ev.free_ns, t0)
            events.append(j)
        return {"device": name, "start_ns": bounds[0], "end_ns": bounds[1], **found, "events": events}

    def _communication(self, request, run, worker, window, digest):
        t0 = digest.window.start_ns
        comm = to_json(digest.communication)
        for c in comm["calls"]:
            c["start_ns"] = _rel(c["start_ns"], t0)
        return {**self._head(run, worker, window, digest), "communication": comm}

    # cross-rank ------------------------------------------------------------------------------
    @wrappers.Request.application
    def _serve_cluster(self, request):
        return self._answer(request, lambda: self._cluster(request))

    def _prefetch_progress(self, store, run: str, index: int, items: list) -> dict | None:
        """Digest the windows `items` in parallel processes (Store.prefetch), one background
        prefetch per (run, window index). None when they are done; else {done, total} so far."""
        key = (run, index)
        with self._prefetch_lock:
            st = self._prefetches.get(key)
            if st is None or (not st["thread"].is_alive() and st["items"] != items):
                st = {"items": items, "done": 0, "total": len(items)}
                n = len(items)

                def progress(done, todo, st=st, n=n):  # windows already digested count as done
                    st["done"], st["total"] = n - todo + done, n

                def work(st=st):
                    try:
                        st["errors"] = store.prefetch(items, progress)
                    except Exception:  # the digests are then computed one by one on request
                        log.exception("canning: prefetch of %s window %d failed", run, index)

                st["thread"] = threading.Thread(target=work, name=f"canning-prefetch-{index}", daemon=True)
                self._prefetches[key] = st
                st["thread"].start()
        st["thread"].join(0.3)  # digests already cached: answer at once
        if not st["thread"].is_alive():
            return None
        return {"done": st["done"], "total": st["total"]}

    def _cluster(self, request):
        """analyse_ranks over the window at the same position of every worker of the run.
        Windows that cannot be read are left out and listed in `problems`."""
        from canning_tb.analysis.cluster import analyse_ranks, rank_ids
        from canning_tb.analysis.summary import rank_row, run_summary

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
                raise _unknown_window(run, args["worker"], args["window"])
            index = ids.index(args["window"])
        else:
            raise _HTTPError(400, "missing parameter: window_index (or worker and window)")
        chosen = []
        for w in workers:
            wins = store.windows(run, w.name)
            if 0 <= index < len(wins):
                chosen.append((w, wins[index]))
        if not chosen:
            raise _HTTPError(404, f"no window at position {index} in run {run!r}")
        pending = self._prefetch_progress(store, run, index, [(run, w.name, win.id) for w, win in chosen])
        if pending is not None:
            return {"run": run, "window_index": index, "loading": True, **pending}, 202
        members, digests, problems = [], [], []
        for w, win in chosen:
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
        per_rank = []
        for m, r, d in zip(members, rank_ids(digests), digests):
            m["cluster_rank"] = r
            per_rank.append({"rank": r, "worker": m["worker"], "window": m["window"], **rank_row(d)})
        per_rank.sort(key=lambda x: x["rank"])
        return {"run": run, "window_index": index, "loading": False, "workers": members, "problems": problems,
                "per_rank": per_rank, "run_summary": run_summary(per_rank), **result}, 200


def _int_arg(request, key: str) -> int | None:
    value = request.args.get(key)
    if value in (None, ""):
        return None
    try:
        return int(value)
    except ValueError:
        raise _HTTPError(400, f"{key} must be an integer, not {value!r}") from None
