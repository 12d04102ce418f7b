"""The capture routes (docs/http_api.md#capture): ask a running job that opted in with ps.on_demand() to
record steps, and say where the request stands. They only write the run's request file (capture/targets.py).

Off unless TensorBoard was started with `--canning_capture` (loader.py defines the flag) or with
CANNING_CAPTURE=1 in its environment: TensorBoard has no authentication, so whoever reaches it could ask.
Then every route answers 403 saying how to turn it on. The one that writes takes POST only, with a JSON
body and the header `X-Canning-Capture: 1` (a page of another site cannot send that header without a CORS
preflight, which TensorBoard does not answer) and a `Host` that names the address TensorBoard serves (hosts.py:
DNS rebinding), at most one request per run every ASK_INTERVAL_S here, and logs who asked. The options are
checked here and again by the job.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time

from werkzeug import wrappers

from canning_tb.capture import request as cr
from canning_tb.capture.targets import CaptureBusy, Target, ask, run_state, summary, targets
from canning_tb.queries.errors import BadParameter, NotFound, Unreadable

from .boundary import error_answer, json_response
from .errors import RouteError
from .hosts import HOSTS_ENV, allowed_hosts, host_allowed

log = logging.getLogger("canning_tb.plugin")

FLAG = "canning_capture"
ENV = "CANNING_CAPTURE"
OFF = ("capture is off: start TensorBoard with --canning_capture (or with CANNING_CAPTURE=1 in its "
       "environment) to ask running jobs for a capture")
HEADER = "X-Canning-Capture"
ASK_INTERVAL_S = 2.0
TARGETS_TTL_S = 3.0


def capture_enabled(flags) -> bool:
    if getattr(flags, FLAG, False) is True:
        return True
    return os.environ.get(ENV, "").strip().lower() in ("1", "true", "yes", "on")


class CaptureRoutes:
    def __init__(self, logdir: str | None, enabled: bool, hosts: frozenset | None = None):
        self.logdir, self.enabled = logdir, enabled
        self.hosts = allowed_hosts(None) if hosts is None else hosts  # loopback names only
        self._lock = threading.Lock()
        self._targets: tuple[dict, float] = ({}, -1e9)
        self._asked: dict[str, float] = {}

    def apps(self) -> dict:
        return {"/capture": self._app(self._list, "GET"), "/capture_state": self._app(self._state, "GET"),
                "/capture_request": self._app(self._request, "POST")}

    def _app(self, handle, method: str):
        """A capture route behind the plugin's one error mapping (boundary.py); its own methods."""
        @wrappers.Request.application
        def app(request):
            allowed = ("GET", "HEAD") if method == "GET" else ("POST",)
            try:
                if request.method not in allowed:
                    raise RouteError(405, f"method {request.method} not allowed here: only {', '.join(allowed)}")
                if not self.enabled:
                    raise RouteError(403, OFF)
                code, body = handle(request)
            except Exception as error:  # the request boundary: the same table as every route
                code, body = error_answer(error, None, self.logdir, request.path)
                body.setdefault("enabled", self.enabled)
            response = json_response(request, body, code)
            if code == 405:
                response.headers["Allow"] = ", ".join(allowed)
            return response

        return app

    # -- the routes ------------------------------------------------------------------------------
    def _list(self, request):
        now = time.time_ns()
        runs = [{"run": name, **summary(target, now)} for name, target in sorted(self._runs().items())]
        limits = {"max_steps": cr.MAX_STEPS, "activities": list(cr.ACTIVITIES), "options": list(cr.OPTIONS)}
        return 200, {"enabled": True, "runs": runs, "limits": limits}

    def _state(self, request):
        run = request.args.get("run", "")
        try:
            return 200, {"run": run, **run_state(self._target(run))}
        except cr.UnusableFile as e:  # this run's file: 422 naming it; every other run still answers
            where = e.file if run == "." else f"{run}/{e.file}"
            raise Unreadable(f"{where}: {e.problem}", file=where) from None

    def _request(self, request):
        if not host_allowed(request.headers.get("Host"), self.hosts):
            raise RouteError(403, f"a capture request must be addressed to the address TensorBoard serves, not "
                                  f"Host {request.headers.get('Host', '')[:80]!r} (start TensorBoard with --host NAME, "
                                  f"or name it in {HOSTS_ENV})")
        if request.headers.get(HEADER) != "1" or request.mimetype != "application/json":
            raise RouteError(403, f"a capture request needs a JSON body and the header {HEADER}: 1")
        raw = request.stream.read(cr.MAX_REQUEST_BYTES + 1)
        try:
            body = cr.loads_bounded(raw, cr.MAX_REQUEST_BYTES, "the request body")
        except cr.RequestError as e:
            raise RouteError(413 if len(raw) > cr.MAX_REQUEST_BYTES else 400, str(e)) from None
        if not isinstance(body, dict) or not isinstance(body.get("run"), str):
            raise BadParameter("the body must be a JSON object naming the run: {\"run\": ..., \"steps\": ...}")
        run = body.pop("run")
        target = self._target(run)
        self._rate_limit(run, check=True)
        try:
            state = ask(target, body, "tensorboard")
        except cr.JobNotReady as e:
            raise RouteError(409, str(e)) from None
        except cr.RequestError as e:
            raise BadParameter(str(e)) from None
        except CaptureBusy as e:
            raise RouteError(409, str(e)) from None
        self._rate_limit(run, check=False)
        log.warning("canning: capture %s of run %r asked from %s: steps %d-%d, ranks %s", state["id"], run,
                    request.remote_addr, state["start_step"], state["end_step"], json.dumps(body.get("ranks", "all")))
        return 201, {"run": run, "request": state}

    # -- helpers -----------------------------------------------------------------------------------
    def _runs(self, fresh: bool = False) -> dict[str, Target]:
        """The runs a capture may be asked of (cached for a few seconds: the UI polls)."""
        with self._lock:
            found, at = self._targets
            if time.monotonic() - at < (0.5 if fresh else TARGETS_TTL_S):  # asked afresh: still not a walk per call
                return found
        found = targets(self.logdir) if self.logdir else {}
        with self._lock:
            self._targets = (found, time.monotonic())
        return found

    def _target(self, run: str) -> Target:
        # looked up in the listing only, never joined into a path; a run that just appeared: listed afresh
        target = self._runs().get(run) or self._runs(fresh=True).get(run)
        if target is None:
            raise NotFound(f"no job watches run {run!r} for a capture request (ps.on_demand())")
        return target

    def _rate_limit(self, run: str, check: bool) -> None:
        """At most one request written per run every ASK_INTERVAL_S (check before, count after writing)."""
        with self._lock:
            now = time.monotonic()
            if not check:
                self._asked[run] = now
            elif now - self._asked.get(run, -1e9) < ASK_INTERVAL_S:
                raise RouteError(429, f"run {run!r} was asked a moment ago; "
                                        f"wait {ASK_INTERVAL_S:g} s between requests")

