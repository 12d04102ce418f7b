"""A capture request and a rank's capture status: the contract between whoever asks for a capture (the
plugin's route, `canning-prof capture`) and a training job that opted in with `ps.on_demand()`.

Light on purpose (json, math, re, secrets only): the job and the viewer both import it, neither imports the other.
Both files live in the run folder's `.canning-capture/` (capture_files.py writes and reads them, atomically):

`request.json`, one per run, replaced by each new request (one JSON object, at most MAX_REQUEST_BYTES):

| key          | type                 | meaning |
|--------------|----------------------|---------|
| format       | "canning-capture-request" | |
| version      | 1                    | REQUEST_VERSION |
| id           | 16 lowercase hex     | names this request in every rank's status and in the job's log |
| by           | "tensorboard" \\| "cli" \\| "trigger" | who wrote it ("trigger": the job itself, ps.on_demand(trigger=...)) |
| created_ns   | int                  | wall clock of the writer, ns since the epoch |
| start_step   | int, seen_step..seen_step + MAX_LEAD_STEPS | the first recorded step, the same on every rank (see plan_start) |
| steps        | int, 1..MAX_STEPS    | steps recorded |
| seen_step    | int, 0..MAX_STEP     | the furthest step the writer saw in the ranks' statuses |
| ranks        | "all" \\| [int]       | the ranks that record (a rank not listed records nothing) |
| activities   | [str]                | among ACTIVITIES; [] = the job's own |
| record_shapes, profile_memory, with_stack, with_flops, with_modules | bool | torch.profiler's options |
| trigger      | {kind, step, step_ns, median_ns, reason} | only, and always, when by is "trigger": why the job asked (TRIGGER_KEYS) |

`trigger`: kind among TRIGGER_KINDS ("slow": ps.when_slow, "every": ps.when_every, "when": ps.when); step, the
step that fired it (as the job counts them); step_ns, how long that step took; median_ns, the baseline's median
step time (null when the rule keeps none); reason, one line for people (at most MAX_REASON characters), e.g.
"step 4,213 took 81 ms, 2.4x the median 34 ms". The window's manifest carries it on (util/manifest.py).

Nothing else: an unknown key, a value of another type, a number out of range, a duplicate key or a file
over the limit makes the whole request refused (RequestError says why). No value is a path or code.
A start step further than MAX_LEAD_STEPS after the step its writer saw (or, in the job, after the step the
rank is at) is one no job reaches in time: taken, it would hold the job "busy" until then, so it is refused.

`rank<R>.status.json`, one per rank, rewritten by the job every heartbeat and at each change (STATUS_KEYS):
the rank's step and step rate, its watch settings, the last request it read and what it did with it
(`state`: one of STATES), the windows it wrote for it (manifest names), and a message for people.
"""
from __future__ import annotations

import json
import math
import re
import secrets

REQUEST_FORMAT = "canning-capture-request"
STATUS_FORMAT = "canning-capture-status"
REQUEST_VERSION = 1
MAX_REQUEST_BYTES = 4096
MAX_STATUS_BYTES = 16384
MAX_STEPS = 50                 # steps one capture may record
MAX_LISTED_RANKS = 512         # ranks a request may name one by one ("all" for more)
MAX_RANK = 1 << 20
MAX_STEP = 1 << 53             # any step a job can reach; keeps the numbers exact in JSON readers
# A start this many steps ahead is out of reach: plan_start's lead is two polls (at most 600 s each) and a
# slack at the fastest rank's rate, so 2**20 steps allow for 870 steps/s at the slowest poll
MAX_LEAD_STEPS = 1 << 20
ACTIVITIES = ("CPU", "CUDA", "NPU")
OPTIONS = ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")
WRITERS = ("tensorboard", "cli", "trigger")
TRIGGER_KINDS = ("slow", "every", "when")
TRIGGER_KEYS = ("kind", "step", "step_ns", "median_ns", "reason")
MAX_REASON = 200
MIN_LEAD_STEPS = 2             # a warm-up step, and one step for the slowest poll to land in
LEAD_SLACK_S = 2.0             # on top of two poll intervals of the slowest rank: storage latency

# A rank's state for the request it read last. Terminal: the rank is done with that request.
IDLE, SCHEDULED, RECORDING, WRITTEN = "idle", "scheduled", "recording", "written"
MISSED, REFUSED, FAILED, NOT_SELECTED = "missed", "refused", "failed", "not_selected"
STATES = (IDLE, SCHEDULED, RECORDING, WRITTEN, MISSED, REFUSED, FAILED, NOT_SELECTED)
TERMINAL = (WRITTEN, MISSED, REFUSED, FAILED, NOT_SELECTED)

_ID_RE = re.compile(r"^[0-9a-f]{16}$")
_REQUEST_KEYS = ("format", "version", "id", "by", "created_ns", "start_step", "steps", "seen_step", "ranks",
                 "activities", *OPTIONS)
_OPTION_KEYS = ("steps", "ranks", "activities", *OPTIONS)  # what a person chooses (the rest is planned)


class RequestError(ValueError):
    """A request (or the options for one) that cannot be used: the message says why, for people."""


class JobNotReady(RequestError):
    """The options are fine, but the run's job cannot be asked now (none watching, just started)."""


class UnusableFile(RequestError):
    """A capture file that is there but cannot be used: `file` (relative to the run folder) and the problem."""

    def __init__(self, file: str, problem: str):
        super().__init__(f"{file}: {problem}")
        self.file, self.problem = file, problem


def check_int(value, name: str, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise RequestError(f"{name} must be a whole number from {lo} to {hi}, not {_shown(value)}")
    return value


def _shown(value) -> str:
    text = json.dumps(value) if isinstance(value, (int, float, str, bool, type(None))) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise RequestError(f"duplicate key {next(k for k in keys if keys.count(k) > 1)!r}")
    return dict(pairs)


def _no_constant(name):
    raise RequestError(f"{name} is not a number a request may hold")


def loads_bounded(raw: bytes, limit: int, what: str):
    """JSON of at most `limit` bytes; no NaN / Infinity, no duplicate keys."""
    if len(raw) > limit:
        raise RequestError(f"{what} is {len(raw)} bytes, over the limit of {limit}")
    try:
        return json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except RequestError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise RequestError(f"{what} is not JSON: {e}") from None


def check_options(options) -> dict:
    """What a person may choose, checked: {steps, ranks, activities, record_shapes, ...} (defaults filled in)."""
    if not isinstance(options, dict):
        raise RequestError("the capture options must be a JSON object")
    unknown = sorted(set(options) - set(_OPTION_KEYS))
    if unknown:
        raise RequestError(f"unknown option {unknown[0]!r}: the options are {', '.join(_OPTION_KEYS)}")
    if "steps" not in options:
        raise RequestError("steps is required")
    out = {"steps": check_int(options["steps"], "steps", 1, MAX_STEPS),
           "ranks": check_ranks(options.get("ranks", "all")),
           "activities": _activities(options.get("activities", []))}
    for name in OPTIONS:
        value = options.get(name, False)
        if not isinstance(value, bool):
            raise RequestError(f"{name} must be true or false, not {_shown(value)}")
        out[name] = value
    return out


def check_ranks(value):
    if value == "all":
        return "all"
    if not isinstance(value, list) or not value:
        raise RequestError(f'ranks must be "all" or a list of rank numbers, not {_shown(value)}')
    if len(value) > MAX_LISTED_RANKS:
        raise RequestError(f'at most {MAX_LISTED_RANKS} ranks may be listed; ask for "all" instead')
    ranks = [check_int(r, "each rank", 0, MAX_RANK) for r in value]
    if len(set(ranks)) != len(ranks):
        raise RequestError("a rank is listed twice")
    return sorted(ranks)


def _activities(value) -> list:
    if not isinstance(value, list) or len(value) > len(ACTIVITIES):
        raise RequestError(f"activities must be a list among {', '.join(ACTIVITIES)}, not {_shown(value)}")
    out = []
    for a in value:
        if not isinstance(a, str) or a.upper() not in ACTIVITIES:
            raise RequestError(f"unknown activity {_shown(a)}: the activities are {', '.join(ACTIVITIES)}")
        if a.upper() in out:
            raise RequestError(f"activity {a.upper()} is listed twice")
        out.append(a.upper())
    return out


def check_trigger(value) -> dict:
    """A request's (and a manifest's) `trigger`, every key checked."""
    if not isinstance(value, dict) or sorted(value) != sorted(TRIGGER_KEYS):
        raise RequestError(f"trigger must be an object of exactly {', '.join(TRIGGER_KEYS)}")
    if value["kind"] not in TRIGGER_KINDS:
        raise RequestError(f"trigger kind must be one of {', '.join(TRIGGER_KINDS)}, not {_shown(value['kind'])}")
    reason = value["reason"]
    if not isinstance(reason, str) or len(reason) > MAX_REASON or not reason.isprintable():
        raise RequestError(f"trigger reason must be one printable line of at most {MAX_REASON} characters")
    median = value["median_ns"]
    return {"kind": value["kind"], "step": check_int(value["step"], "trigger step", 0, MAX_STEP),
            "step_ns": check_int(value["step_ns"], "trigger step_ns", 0, 1 << 63),
            "median_ns": None if median is None else check_int(median, "trigger median_ns", 0, 1 << 63),
            "reason": reason}


def parse_request(raw: bytes) -> dict:
    """The request in `raw`, every key checked; RequestError for anything else."""
    data = loads_bounded(raw, MAX_REQUEST_BYTES, "the request")
    if not isinstance(data, dict):
        raise RequestError("the request must be a JSON object")
    unknown = sorted(set(data) - set(_REQUEST_KEYS) - {"trigger"})
    if unknown:
        raise RequestError(f"unknown key {_shown(unknown[0])} in the request")
    if ("trigger" in data) != (data.get("by") == "trigger"):
        raise RequestError('a request holds a trigger when, and only when, it is by "trigger"')
    missing = [k for k in _REQUEST_KEYS if k not in data]
    if missing:
        raise RequestError(f"the request lacks {missing[0]!r}")
    if data["format"] != REQUEST_FORMAT or data["version"] != REQUEST_VERSION:
        raise RequestError(f"not a version-{REQUEST_VERSION} capture request")
    if not isinstance(data["id"], str) or not _ID_RE.match(data["id"]):
        raise RequestError("id must be 16 lowercase hexadecimal digits")
    if data["by"] not in WRITERS:
        raise RequestError(f"by must be one of {', '.join(WRITERS)}, not {_shown(data['by'])}")
    out = {"format": REQUEST_FORMAT, "version": REQUEST_VERSION, "id": data["id"], "by": data["by"],
           "created_ns": check_int(data["created_ns"], "created_ns", 0, 1 << 63),
           "start_step": check_int(data["start_step"], "start_step", 0, MAX_STEP),
           "seen_step": check_int(data["seen_step"], "seen_step", 0, MAX_STEP)}
    if not out["seen_step"] <= out["start_step"] <= out["seen_step"] + MAX_LEAD_STEPS:
        raise RequestError(f"start_step {out['start_step']} is not within {MAX_LEAD_STEPS} steps after seen_step "
                           f"{out['seen_step']}: out of reach")
    out.update(check_options({k: data[k] for k in _OPTION_KEYS}))
    if "trigger" in data:
        out["trigger"] = check_trigger(data["trigger"])
    return out


def end_step(request: dict) -> int:
    """The last step the request records."""
    return request["start_step"] + request["steps"] - 1


def targets(request: dict, rank: int) -> bool:
    return request["ranks"] == "all" or rank in request["ranks"]


# -- statuses ------------------------------------------------------------------------------------------
STATUS_KEYS = {"rank": int, "world_size": int, "host": str, "pid": int, "time_ns": int, "step": int,
               "steps_per_s": (float, type(None)), "poll_s": float, "cycle_s": float, "heartbeat_s": float,
               "min_interval_s": float,
               "max_steps": int, "backend": str, "watching": bool, "watch_since_ns": int,
               "request": (str, type(None)), "state": str, "message": str,
               "start_step": (int, type(None)), "end_step": (int, type(None)), "windows": list}


def parse_status(raw: bytes) -> dict:
    """A rank's status, its keys type-checked (a status is shown to people, never acted upon)."""
    data = loads_bounded(raw, MAX_STATUS_BYTES, "the status")
    if not isinstance(data, dict) or data.get("format") != STATUS_FORMAT:
        raise RequestError("not a capture status")
    out = {}
    for key, kind in STATUS_KEYS.items():
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and kind in (float, (float, type(None))):
            value = float(value)
        if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
            raise RequestError(f"status key {key!r} is missing or of the wrong type")
        out[key] = value
    if out["state"] not in STATES:
        raise RequestError(f"unknown state {_shown(out['state'])}")
    out["windows"] = [w for w in out["windows"] if isinstance(w, str)][:64]
    return out


def status_dict(**fields) -> dict:
    return {"format": STATUS_FORMAT, **fields}


def is_live(status: dict, now_ns: int) -> bool:
    """A rank that still runs its watch: a heartbeat not older than three of its intervals (plus slack)."""
    return status["watching"] and now_ns - status["time_ns"] <= (3 * status["heartbeat_s"] + 5) * 1e9


def latest_by_rank(statuses: list) -> dict:
    """{rank: its newest status} (a restarted rank leaves the old file's content behind only until it writes)."""
    out: dict = {}
    for s in statuses:
        if s["rank"] not in out or s["time_ns"] > out[s["rank"]]["time_ns"]:
            out[s["rank"]] = s
    return out


# -- the writer's side ---------------------------------------------------------------------------------
def plan_start(statuses: list, now_ns: int) -> tuple[int, int]:
    """(start_step, seen_step): the first step every rank records, and the furthest step seen.

    Every live rank says its step, when it was there, and its step rate. The start is that furthest
    step, moved on by the rate for the time since (at most two heartbeats: an older one is not
    extrapolated further), plus a lead of two poll intervals of the slowest-polling rank (as measured
    between its reads of the request file: on object storage a read and a status write take their time)
    and LEAD_SLACK_S, counted in steps of the fastest rank, and at least MIN_LEAD_STEPS. A rank that reads the request only after its start step records nothing and says
    so (state "missed"): it never holds the others, and they all still record the same steps.
    """
    live = [s for s in latest_by_rank(statuses).values() if is_live(s, now_ns)]
    if not live:
        raise JobNotReady("no job is watching this run for a capture: no heartbeat from ps.on_demand() "
                           "in its .canning-capture folder lately (is the job running, with schedule=ps.on_demand()?)")
    if any(s["steps_per_s"] is None for s in live):
        raise JobNotReady("the job has only just started: its step rate is not known yet; ask again in a few seconds")
    furthest, seen = 0.0, 0
    for s in live:
        age_s = min(max(0.0, (now_ns - s["time_ns"]) / 1e9), 2 * s["heartbeat_s"])
        furthest = max(furthest, s["step"] + s["steps_per_s"] * age_s)
        seen = max(seen, s["step"])
    rate = max(s["steps_per_s"] for s in live)
    lead_s = 2 * max(max(s["poll_s"], s["cycle_s"]) for s in live) + LEAD_SLACK_S
    start = math.ceil(furthest) + max(MIN_LEAD_STEPS, math.ceil(rate * lead_s))
    if start > MAX_STEP:
        raise JobNotReady("the job's step count is past what a request may name")
    if start - seen > MAX_LEAD_STEPS:
        raise JobNotReady(f"the job steps too fast for its poll interval: a capture would start more than "
                          f"{MAX_LEAD_STEPS} steps ahead (poll more often: ps.on_demand(poll_s=...))")
    return start, seen


def new_request(options: dict, statuses: list, now_ns: int, by: str) -> dict:
    """A request for these options (checked), its start step planned from the ranks' statuses."""
    chosen = check_options(options)
    start, seen = plan_start(statuses, now_ns)
    live = [s for s in latest_by_rank(statuses).values() if is_live(s, now_ns)]
    limit = min(s["max_steps"] for s in live)
    if chosen["steps"] > limit:
        raise JobNotReady(f"this job records at most {limit} steps per capture (ps.on_demand(max_steps=...))")
    world = max(s["world_size"] for s in live)
    outside = [r for r in chosen["ranks"] if r >= world] if chosen["ranks"] != "all" else []
    if outside:
        raise RequestError(f"rank {outside[0]} is not in this job: its world size is {world}")
    return {"format": REQUEST_FORMAT, "version": REQUEST_VERSION, "id": secrets.token_hex(8), "by": by,
            "created_ns": now_ns, "start_step": start, "seen_step": seen, **chosen}


def plan_triggered_start(step: int, step_s: float, statuses: list, now_ns: int, poll_s: float) -> tuple[int, int]:
    """(start_step, seen_step) of a request the job asks of itself at `step`, where a step took `step_s`.

    As plan_start, but counted at the pace of the step that fired it (a slow step: the slowness is what
    is to be recorded, and at the pace before it the start would come long after): the lead is two poll
    intervals of the slowest-polling live rank (this one's `poll_s` at least) and LEAD_SLACK_S, in such
    steps, at least MIN_LEAD_STEPS. If the job is fast again at once, a rank that reads the request after
    the start says "missed" (as for any request): no rank records other steps than the rest.
    """
    live = [s for s in latest_by_rank(statuses).values() if is_live(s, now_ns)]
    seen = max([step] + [s["step"] for s in live])
    lead_s = 2 * max([poll_s] + [max(s["poll_s"], s["cycle_s"]) for s in live]) + LEAD_SLACK_S
    lead = max(MIN_LEAD_STEPS, math.ceil(lead_s / max(step_s, 1e-6)))
    start = seen + min(lead, MAX_LEAD_STEPS)
    if start > MAX_STEP:
        raise JobNotReady("the job's step count is past what a request may name")
    return start, seen


def new_triggered_request(trigger: dict, steps: int, step: int, step_s: float, statuses: list, now_ns: int,
                          poll_s: float) -> dict:
    """The request a job's trigger writes: every rank, the job's own activities and options."""
    start, seen = plan_triggered_start(step, step_s, statuses, now_ns, poll_s)
    return {"format": REQUEST_FORMAT, "version": REQUEST_VERSION, "id": secrets.token_hex(8), "by": "trigger",
            "created_ns": now_ns, "start_step": start, "seen_step": seen,
            **check_options({"steps": steps}), "trigger": check_trigger(trigger)}


def busy_reason(previous: dict | None, statuses: list, now_ns: int) -> str | None:
    """Why a new request must wait: the previous one is still in progress, or the job's rate limit
    (ps.on_demand(min_interval_s=...)) has not passed since it; None when a new one may be written."""
    if previous is None:
        return None
    state = request_state(previous, statuses, now_ns)
    if state["state"] in ("waiting", SCHEDULED, RECORDING):
        return f"a capture is in progress ({state['message']}); ask again once it is written"
    live = [s for s in latest_by_rank(statuses).values() if is_live(s, now_ns)]
    if live:
        # the job counts from when it read the previous request, at most one poll after it was written
        wait_s = max(s["min_interval_s"] + 2 * s["poll_s"] for s in live) - (now_ns - previous["created_ns"]) / 1e9
        if wait_s > 0:
            every = max(s["min_interval_s"] for s in live)
            return f"this job accepts one capture per {every:g} s; ask again in {math.ceil(wait_s)} s"
    return None


def request_state(request: dict, statuses: list, now_ns: int) -> dict:
    """Where a request stands, for people: overall state, a message, and each targeted rank's state.

    state: "waiting" (no targeted rank has read it yet), "scheduled", "recording" (on K of N ranks),
    "written" (every targeted rank wrote its window), "partial" (some wrote, the others are done
    without: missed, refused, failed or gone), or "refused" / "failed" / "missed" when none wrote.
    """
    latest = latest_by_rank(statuses)
    world = max((s["world_size"] for s in latest.values()), default=0)
    wanted = request["ranks"] if request["ranks"] != "all" else list(range(world)) or sorted(latest)
    ranks = [_rank_state(request, r, latest.get(r), now_ns) for r in wanted]
    count = {k: sum(1 for r in ranks if r["state"] == k) for k in (*STATES, "waiting")}
    total, written = len(ranks), count[WRITTEN]
    steps = f"steps {request['start_step']}-{end_step(request)}"
    if count[RECORDING]:
        state, message = RECORDING, f"recording {steps} on {count[RECORDING] + written} of {total} ranks"
    elif count[SCHEDULED]:  # a scheduled rank has a status, so a step
        at = max(r["step"] for r in ranks if r["step"] is not None)
        state, message = SCHEDULED, f"{steps} start soon (the job is at step {at})"
    elif count["waiting"]:
        state, message = "waiting", f"waiting for the job to read the request ({steps})"
    elif written == total and total:
        state, message = WRITTEN, f"written: {steps} on {total} of {total} ranks"
    elif written:
        state, message = "partial", f"written on {written} of {total} ranks ({steps}); " + _others(ranks)
    else:
        state = next((k for k in (REFUSED, FAILED, MISSED) if count[k]), "gone")
        message = f"nothing written: {_others(ranks)}" if ranks else "no rank of the job answered"
    return {"id": request["id"], "by": request["by"], "created_ns": request["created_ns"], "state": state,
            "message": message, "start_step": request["start_step"], "end_step": end_step(request),
            "steps": request["steps"], "ranks": ranks,
            "written_by": [r["rank"] for r in ranks if r["state"] == WRITTEN],
            "trigger": request.get("trigger")}  # why the job asked itself (by "trigger"), else None


def _rank_state(request: dict, rank: int, status: dict | None, now_ns: int) -> dict:
    out = {"rank": rank, "state": "gone", "message": "no status from this rank", "windows": [], "step": None}
    if status is None:
        return out
    out["step"] = status["step"]
    live = is_live(status, now_ns)
    if status["request"] == request["id"]:
        out.update(state=status["state"], message=status["message"], windows=status["windows"])
        if status["state"] in (SCHEDULED, RECORDING) and not live:
            out.update(state="gone", message=f"stopped answering while {status['state']}")
        return out
    if status["watch_since_ns"] > request["created_ns"]:
        out["message"] = "this process started watching after the request was written: not acted upon"
        return out
    late = status["time_ns"] - request["created_ns"] > 2 * status["poll_s"] * 1e9  # it had time to read it
    if not live:
        out["message"] = "no heartbeat lately: the rank is not running"
    elif late and status["step"] >= request["start_step"]:
        out.update(state=MISSED, message=f"did not read the request before step {request['start_step']} "
                                         f"(now at step {status['step']})")
    else:
        out.update(state="waiting", message="has not read the request yet")
    return out


def _others(ranks: list) -> str:
    parts = [f"rank {r['rank']} {r['state']}" + (f" ({r['message']})" if r["message"] else "")
             for r in ranks if r["state"] != WRITTEN][:4]
    return "; ".join(parts)
