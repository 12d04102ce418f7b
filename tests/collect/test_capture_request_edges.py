"""capture/request.py at its edges (issue 46: the survivors of a mutation run over it), every expected value worked
out by hand from the format its module doc gives: each number's range at both ends, the file size limit to the
byte, the start step's reach (seen_step .. seen_step + 2**20), a heartbeat exactly at its age limit, the start a
writer plans from the ranks' statuses (their steps, rates, polls and ages), the rate limit to the second, and
where a request stands as the ranks' statuses say."""
import json
import math

import pytest

from _capture import request
from canning_tb.capture import request as cr

NOW = 1_000_000_000_000_000_000  # ns
S = 1_000_000_000  # one second in ns


def status(rank=0, *, step=100, age_s=0.0, rate=10.0, poll_s=0.5, cycle_s=0.25, heartbeat_s=1.0, world=2,
           watching=True, state=cr.IDLE, request_id=None, watch_since_ns=0, max_steps=50, min_interval_s=0.0,
           windows=(), message=""):
    """A rank's status as parse_status gives it (every STATUS_KEYS key), written `age_s` before NOW."""
    return {"rank": rank, "world_size": world, "host": "h", "pid": 1, "time_ns": NOW - int(age_s * S), "step": step,
            "steps_per_s": rate, "poll_s": poll_s, "cycle_s": cycle_s, "heartbeat_s": heartbeat_s,
            "min_interval_s": min_interval_s, "max_steps": max_steps, "backend": "gloo", "watching": watching,
            "watch_since_ns": watch_since_ns, "request": request_id, "state": state, "message": message,
            "start_step": None, "end_step": None, "windows": list(windows)}


def refused(what, *args, match=None):
    with pytest.raises(cr.RequestError, match=match):
        what(*args)


# -- the request's values ----------------------------------------------------------------------------------
def test_whole_numbers_are_taken_at_both_ends_of_their_range_and_nowhere_else():
    assert cr.check_int(1, "steps", 1, 50) == 1 and cr.check_int(50, "steps", 1, 50) == 50
    for bad in (0, 51, True, 2.0, "3", None):
        refused(cr.check_int, bad, "steps", 1, 50, match="steps must be a whole number from 1 to 50")
    with pytest.raises(cr.RequestError) as e:
        cr.check_int(51, "steps", 1, 50)
    assert str(e.value) == "steps must be a whole number from 1 to 50, not 51"
    with pytest.raises(cr.RequestError) as e:
        cr.check_int("x" * 50, "steps", 1, 50)  # a value is shown cut after 37 characters of its JSON
    assert str(e.value).endswith('not "' + "x" * 36 + "...")
    with pytest.raises(cr.RequestError) as e:
        cr.check_int("x" * 38, "steps", 1, 50)  # 40 characters of JSON: shown whole
    assert str(e.value).endswith('not "' + "x" * 38 + '"')
    with pytest.raises(cr.RequestError) as e:
        cr.check_int({"a": 1}, "steps", 1, 50)
    assert str(e.value).endswith("not dict")


def test_a_file_of_exactly_its_limit_is_read_and_one_byte_more_is_not():
    exact = b'{"a":"' + b"x" * 92 + b'"}'  # 100 bytes
    assert cr.loads_bounded(exact, 100, "the request") == {"a": "x" * 92}
    with pytest.raises(cr.RequestError) as e:
        cr.loads_bounded(exact + b" ", 100, "the request")
    assert str(e.value) == "the request is 101 bytes, over the limit of 100"
    refused(cr.loads_bounded, b'{"a":1,"a":2}', 100, "the request", match="duplicate key 'a'")
    refused(cr.loads_bounded, b'{"a":NaN}', 100, "the request", match="NaN is not a number a request may hold")
    refused(cr.loads_bounded, b'{"a":"\xff"}', 100, "the request", match="the request is not JSON")
    refused(cr.loads_bounded, b"[" * 100_000, 200_000, "the request", match="is not JSON")


def test_options_are_checked_and_their_defaults_filled_in():
    assert cr.check_options({"steps": 3}) == {"steps": 3, "ranks": "all", "activities": [], "record_shapes": False,
                                              "profile_memory": False, "with_stack": False, "with_flops": False,
                                              "with_modules": False}
    got = cr.check_options({"steps": 50, "ranks": [3, 1], "activities": ["cpu", "Npu"], "with_stack": True})
    assert (got["ranks"], got["activities"], got["with_stack"], got["record_shapes"]) == ([1, 3], ["CPU", "NPU"], True,
                                                                                         False)
    refused(cr.check_options, [], match="must be a JSON object")
    refused(cr.check_options, {"steps": 1, "zz": 1, "path": "/"}, match="unknown option 'path'")
    refused(cr.check_options, {"ranks": "all"}, match="steps is required")
    refused(cr.check_options, {"steps": 1, "record_shapes": 1}, match="record_shapes must be true or false, not 1")


def test_ranks_up_to_512_listed_each_once():
    assert cr.check_ranks("all") == "all"
    assert cr.check_ranks(list(range(511, -1, -1))) == list(range(512))
    assert cr.check_ranks([cr.MAX_RANK]) == [1 << 20]
    refused(cr.check_ranks, list(range(513)), match="at most 512 ranks")
    refused(cr.check_ranks, [], match='ranks must be "all" or a list')
    refused(cr.check_ranks, "0", match='ranks must be "all" or a list')
    refused(cr.check_ranks, [2, 2], match="listed twice")
    refused(cr.check_ranks, [(1 << 20) + 1], match="each rank must be a whole number from 0 to 1048576")
    refused(cr.check_ranks, [True], match="each rank")


def test_activities_are_among_three_each_once():
    assert cr.check_options({"steps": 1, "activities": ["npu", "CUDA", "cpu"]})["activities"] == ["NPU", "CUDA", "CPU"]
    for bad, why in ((["CPU", "CUDA", "NPU", "CPU"], "activities must be a list"), ("CPU", "activities must be a list"),
                     (["TPU"], "unknown activity"), ([1], "unknown activity"), (["cpu", "CPU"], "CPU is listed twice")):
        refused(cr.check_options, {"steps": 1, "activities": bad}, match=why)


TRIGGER = {"kind": "slow", "step": 7, "step_ns": 81_000_000, "median_ns": None, "reason": "r" * 200}


def test_a_trigger_reason_of_200_characters_and_numbers_to_2_63():
    assert cr.check_trigger(TRIGGER) == TRIGGER
    assert cr.check_trigger({**TRIGGER, "median_ns": 1 << 63, "step_ns": 1 << 63})["median_ns"] == 1 << 63
    refused(cr.check_trigger, {**TRIGGER, "reason": "r" * 201}, match="at most 200 characters")
    refused(cr.check_trigger, {**TRIGGER, "reason": 5}, match="one printable line")
    refused(cr.check_trigger, {**TRIGGER, "median_ns": (1 << 63) + 1}, match="trigger median_ns")
    refused(cr.check_trigger, {**TRIGGER, "step": -1}, match="trigger step must")
    refused(cr.check_trigger, [], match="exactly kind, step, step_ns, median_ns, reason")


def raw(**fields) -> bytes:
    return json.dumps(request(fields.pop("start_step", 10), **fields)).encode()


def test_a_start_step_from_seen_step_to_2_20_after_it():
    assert cr.parse_request(raw(start_step=500, seen_step=500))["start_step"] == 500
    assert cr.parse_request(raw(start_step=500 + (1 << 20), seen_step=500))["start_step"] == 500 + (1 << 20)
    for start in (499, 501 + (1 << 20)):
        with pytest.raises(cr.RequestError) as e:
            cr.parse_request(raw(start_step=start, seen_step=500))
        assert str(e.value) == f"start_step {start} is not within 1048576 steps after seen_step 500: out of reach"


def test_a_request_is_all_its_documented_keys_and_nothing_else():
    good = cr.parse_request(raw(start_step=12, steps=3, ranks=[1, 0], id="0123456789abcdef"))
    assert good == {**request(12, steps=3, ranks=[0, 1], id="0123456789abcdef", created_ns=good["created_ns"])}
    assert cr.end_step(good) == 14
    assert cr.targets(good, 1) and not cr.targets(good, 2) and cr.targets({"ranks": "all"}, 7)
    for fields, why in (({"version": 2}, "not a version-1 capture request"),
                        ({"format": "other"}, "not a version-1"),
                        ({"id": "0123456789ABCDEF"}, "16 lowercase hexadecimal"),
                        ({"id": 5}, "16 lowercase hexadecimal"),
                        ({"by": "root"}, 'by must be one of tensorboard, cli, trigger, not "root"'),
                        ({"created_ns": -1}, "created_ns must be"),
                        ({"seen_step": (1 << 53) + 1}, "seen_step must be"),
                        ({"extra": 1}, 'unknown key "extra"')):
        refused(cr.parse_request, raw(**fields), match=why)
    body = request(10)
    del body["steps"]
    refused(cr.parse_request, json.dumps(body).encode(), match="the request lacks 'steps'")
    refused(cr.parse_request, b"[1]", match="must be a JSON object")
    refused(cr.parse_request, b" " * 4097, match="4097 bytes, over the limit of 4096")


# -- statuses ----------------------------------------------------------------------------------------------
def test_a_status_is_type_checked_a_whole_number_taken_for_a_float():
    body = {"format": cr.STATUS_FORMAT, **status(poll_s=1, windows=["a.json", 5] + [f"w{i}" for i in range(70)])}
    got = cr.parse_status(json.dumps(body).encode())
    assert got["poll_s"] == 1.0 and isinstance(got["poll_s"], float)
    assert got["windows"] == ["a.json"] + [f"w{i}" for i in range(63)]  # strings only, at most 64
    for key, bad in (("step", True), ("step", 1.5), ("host", None), ("watching", 1), ("steps_per_s", "fast")):
        refused(cr.parse_status, json.dumps({**body, key: bad}).encode(), match=f"status key '{key}'")
    assert cr.parse_status(json.dumps({**body, "steps_per_s": None}).encode())["steps_per_s"] is None
    refused(cr.parse_status, json.dumps({**body, "state": "dancing"}).encode(), match="unknown state")
    refused(cr.parse_status, json.dumps({**body, "format": "x"}).encode(), match="not a capture status")


def test_a_rank_is_live_up_to_three_heartbeats_and_five_seconds():
    assert cr.is_live(status(heartbeat_s=1.0, age_s=8.0), NOW)  # 3 x 1 s + 5 s
    assert not cr.is_live({**status(heartbeat_s=1.0), "time_ns": NOW - 8 * S - 1}, NOW)
    assert not cr.is_live(status(watching=False), NOW)


def test_the_newest_status_of_each_rank_counts():
    old, new, other = status(0, step=1, age_s=2), status(0, step=2, age_s=1), status(1, step=3, age_s=5)
    assert cr.latest_by_rank([old, new, other]) == {0: new, 1: other}
    assert cr.latest_by_rank([new, old]) == {0: new}
    same = status(0, step=9, age_s=1)
    assert cr.latest_by_rank([new, same])[0] is new  # a tie keeps the first read


# -- the writer's plan ---------------------------------------------------------------------------------------
def test_the_start_is_the_furthest_step_moved_on_plus_two_polls_and_the_slack():
    # step 100 a second ago at 10 steps/s: at 110 now; lead 2 x 0.5 s + 2 s = 3 s, 30 steps
    assert cr.plan_start([status(age_s=1.0)], NOW) == (140, 100)
    # the age counts at most two heartbeats: 10 s old with 3 s heartbeats is 6 s on, 160; +30
    assert cr.plan_start([status(age_s=10.0, heartbeat_s=3.0)], NOW) == (190, 100)
    # the fastest rank's rate (20/s), the slowest poll (1.5 s: lead 5 s), the furthest step (100)
    two = [status(0, step=100), status(1, step=90, rate=20.0, poll_s=1.5, cycle_s=0.1)]
    assert cr.plan_start(two, NOW) == (200, 100)
    # the cycle counts where it is longer than the poll: 2 x 4 s + 2 s at 10/s
    assert cr.plan_start([status(cycle_s=4.0)], NOW) == (200, 100)
    # a part step is rounded up (100 + 3 x 0.5 = 101.5 -> 102), lead 3 s x 3/s = 9
    assert cr.plan_start([status(rate=3.0, age_s=0.5)], NOW) == (111, 100)
    assert cr.plan_start([status(rate=0.1)], NOW) == (102, 100)  # 0.3 steps of lead: at least 2


def test_a_plan_needs_a_live_rank_with_a_known_rate_and_a_reachable_start():
    with pytest.raises(cr.JobNotReady, match="no job is watching"):
        cr.plan_start([status(watching=False)], NOW)
    with pytest.raises(cr.JobNotReady, match="only just started"):
        cr.plan_start([status(rate=None)], NOW)
    lead = dict(step=0, poll_s=0.0, cycle_s=0.0)  # a lead of 2 s
    assert cr.plan_start([status(rate=524288.0, **lead)], NOW) == (1 << 20, 0)  # exactly 2**20 ahead
    with pytest.raises(cr.JobNotReady, match="steps too fast"):
        cr.plan_start([status(rate=524288.5, **lead)], NOW)
    assert cr.plan_start([status(step=(1 << 53) - 2, rate=0.1)], NOW)[0] == 1 << 53
    with pytest.raises(cr.JobNotReady, match="past what a request may name"):
        cr.plan_start([status(step=(1 << 53) - 1, rate=0.1)], NOW)


def test_a_new_request_keeps_to_the_jobs_step_limit_and_world():
    ranks = [status(0, max_steps=20), status(1, max_steps=10, world=4)]
    got = cr.new_request({"steps": 10, "ranks": [3]}, ranks, NOW, "cli")
    assert (got["start_step"], got["seen_step"], got["steps"], got["ranks"], got["by"]) == (130, 100, 10, [3], "cli")
    assert cr.parse_request(json.dumps(got).encode()) == got
    with pytest.raises(cr.JobNotReady, match="at most 10 steps"):
        cr.new_request({"steps": 11}, ranks, NOW, "cli")
    refused(cr.new_request, {"steps": 1, "ranks": [4]}, ranks, NOW, "cli",
            match="rank 4 is not in this job: its world size is 4")


def test_a_triggered_start_never_leads_by_more_than_2_20_steps():
    assert cr.plan_triggered_start(100, 1e-9, [], NOW, poll_s=0.0) == (100 + (1 << 20), 100)
    live = [status(step=300, poll_s=3.0)]  # a rank further on, and polling slower: 2 x 3 s + 2 s at 1 s a step
    assert cr.plan_triggered_start(100, 1.0, live, NOW, poll_s=0.5) == (308, 300)
    with pytest.raises(cr.JobNotReady):
        cr.plan_triggered_start((1 << 53) - 1, 60.0, [], NOW, poll_s=0.1)


# -- where a request stands ------------------------------------------------------------------------------------
def test_the_rate_limit_holds_to_the_second():
    previous = {**request(50, id="a" * 16, created_ns=NOW - 61 * S), "ranks": "all"}
    done = [status(0, state=cr.WRITTEN, request_id="a" * 16, min_interval_s=60.0, poll_s=1.0, world=1)]
    # min_interval_s + 2 polls = 62 s after the previous request was written
    assert cr.busy_reason(previous, done, NOW) == "this job accepts one capture per 60 s; ask again in 1 s"
    assert cr.busy_reason({**previous, "created_ns": NOW - 62 * S}, done, NOW) is None
    assert cr.busy_reason({**previous, "created_ns": NOW - int(60.5 * S)}, done, NOW).endswith("ask again in 2 s")
    assert cr.busy_reason(None, done, NOW) is None
    busy = [status(0, state=cr.RECORDING, request_id="a" * 16, world=1)]
    assert cr.busy_reason(previous, busy, NOW).startswith("a capture is in progress (recording steps 50-52 on 1 of 1")


def state_of(statuses, **fields):
    return cr.request_state({**request(50, id="a" * 16, created_ns=NOW - 10 * S), **fields}, statuses, NOW)


def test_where_a_request_stands_over_its_ranks():
    mine = dict(request_id="a" * 16)
    rec = state_of([status(0, state=cr.RECORDING, **mine), status(1, state=cr.WRITTEN, **mine),
                    status(2, state=cr.SCHEDULED, **mine, world=3)])
    assert (rec["state"], rec["message"]) == (cr.RECORDING, "recording steps 50-52 on 2 of 3 ranks")
    sch = state_of([status(0, state=cr.SCHEDULED, step=40, **mine), status(1, state=cr.SCHEDULED, step=45, **mine)])
    assert (sch["state"], sch["message"]) == (cr.SCHEDULED, "steps 50-52 start soon (the job is at step 45)")
    done = state_of([status(r, state=cr.WRITTEN, windows=[f"w{r}"], **mine) for r in (0, 1)])
    assert (done["state"], done["message"], done["written_by"]) == (cr.WRITTEN, "written: steps 50-52 on 2 of 2 ranks",
                                                                   [0, 1])
    assert [r["windows"] for r in done["ranks"]] == [["w0"], ["w1"]]
    part = state_of([status(0, state=cr.WRITTEN, **mine), status(1, state=cr.FAILED, **mine)])
    assert (part["state"], part["message"]) == ("partial", "written on 1 of 2 ranks (steps 50-52); rank 1 failed")
    for states, overall in (((cr.MISSED, cr.REFUSED), cr.REFUSED), ((cr.MISSED, cr.FAILED), cr.FAILED),
                            ((cr.MISSED, cr.NOT_SELECTED), cr.MISSED), ((cr.NOT_SELECTED,) * 2, "gone")):
        got = state_of([status(r, state=s, **mine) for r, s in enumerate(states)])
        assert got["state"] == overall and got["message"].startswith("nothing written: rank 0 ")
    only = state_of([status(0, state=cr.WRITTEN, **mine, world=4)], ranks=[0])  # ranks listed: those only
    assert (only["state"], [r["rank"] for r in only["ranks"]]) == (cr.WRITTEN, [0])
    assert state_of([])["message"] == "no rank of the job answered"


def test_each_ranks_state_for_a_request_it_has_not_acted_on():
    created = NOW - 10 * S
    late = status(0, step=50, poll_s=1.0)  # 10 s after the request, polls of 1 s: it had time; at the start step
    assert state_of([late])["ranks"][0]["state"] == cr.MISSED
    assert state_of([status(0, step=49, poll_s=1.0)])["ranks"][0]["state"] == "waiting"  # before the start
    assert state_of([status(0, step=50, poll_s=5.0)])["ranks"][0]["state"] == "waiting"  # 10 s = 2 polls: not late
    assert state_of([status(0, step=50, poll_s=4.99)])["ranks"][0]["state"] == cr.MISSED
    newer = state_of([status(0, watch_since_ns=created + 1)])["ranks"][0]
    assert newer["state"] == "gone" and "started watching after the request" in newer["message"]
    assert state_of([status(0, watch_since_ns=created)])["ranks"][0]["state"] != "gone"
    dead = state_of([status(0, age_s=60.0)])["ranks"][0]
    assert (dead["state"], dead["message"]) == ("gone", "no heartbeat lately: the rank is not running")
    stopped = state_of([status(0, age_s=60.0, state=cr.RECORDING, request_id="a" * 16)])["ranks"][0]
    assert (stopped["state"], stopped["message"]) == ("gone", "stopped answering while recording")
    absent = state_of([status(1, world=2)])["ranks"][0]
    assert absent == {"rank": 0, "state": "gone", "message": "no status from this rank", "windows": [], "step": None}
    # written for another request: not this one's; at step 100, past this one's start, it missed it
    assert state_of([status(0, state=cr.WRITTEN, request_id="b" * 16)])["state"] == cr.MISSED
    assert math.isclose(cr.LEAD_SLACK_S, 2.0)


# -- the second pass over the survivors: what a person reads, the whole answer, the last edges -----------------------
def message(what, *args) -> str:
    with pytest.raises(cr.RequestError) as e:
        what(*args)
    return str(e.value)


def test_every_refusal_says_what_and_why_in_words():
    bad = {"steps": 1}
    for args, said in (
            ((cr.check_options, []), "the capture options must be a JSON object"),
            ((cr.check_options, {**bad, "zz": 1}),
             "unknown option 'zz': the options are steps, ranks, activities, record_shapes, profile_memory, "
             "with_stack, with_flops, with_modules"),
            ((cr.check_options, {}), "steps is required"),
            ((cr.check_options, {"steps": 0}), "steps must be a whole number from 1 to 50, not 0"),
            ((cr.check_ranks, 7), 'ranks must be "all" or a list of rank numbers, not 7'),
            ((cr.check_ranks, [1, 1]), "a rank is listed twice"),
            ((cr.check_options, {**bad, "activities": "cpu"}),
             'activities must be a list among CPU, CUDA, NPU, not "cpu"'),
            ((cr.check_options, {**bad, "activities": ["tpu"]}),
             'unknown activity "tpu": the activities are CPU, CUDA, NPU'),
            ((cr.check_trigger, {**TRIGGER, "kind": "cron"}),
             'trigger kind must be one of slow, every, when, not "cron"'),
            ((cr.check_trigger, {**TRIGGER, "step_ns": -1}), "trigger step_ns must be a whole number from 0 to "
                                                             "9223372036854775808, not -1"),
            ((cr.check_trigger, {**TRIGGER, "median_ns": -1}), "trigger median_ns must be a whole number from 0 to "
                                                               "9223372036854775808, not -1"),
            ((cr.loads_bounded, b'{"a":1,"b":1,"b":2}', 100, "x"), "duplicate key 'b'"),
            ((cr.parse_request, b"[]"), "the request must be a JSON object"),
            ((cr.parse_request, b"{" + b" " * 4096), "the request is 4097 bytes, over the limit of 4096"),
            ((cr.parse_request, raw(trigger=TRIGGER)),
             'a request holds a trigger when, and only when, it is by "trigger"'),
            ((cr.parse_request, raw(id="x")), "id must be 16 lowercase hexadecimal digits"),
            ((cr.parse_request, raw(start_step=-1)),
             "start_step must be a whole number from 0 to 9007199254740992, not -1"),
            ((cr.parse_status, b"{" + b" " * 16384), "the status is 16385 bytes, over the limit of 16384"),
            ((cr.parse_status, b"[]"), "not a capture status"),
            ((cr.parse_status, json.dumps({"format": cr.STATUS_FORMAT, **status(state="x")}).encode()),
             'unknown state "x"')):
        assert message(*args) == said
    assert message(cr.check_int, "x" * 39, "n", 0, 1).endswith('not "' + "x" * 36 + "...")  # 41 characters: cut


def test_a_plan_that_cannot_be_made_says_why():
    for statuses, said in (
            ([status(watching=False)], "no job is watching this run for a capture: no heartbeat from ps.on_demand() in "
                                       "its .canning-capture folder lately (is the job running, with "
                                       "schedule=ps.on_demand()?)"),
            ([status(rate=None)], "the job has only just started: its step rate is not known yet; ask again in a few "
                                  "seconds"),
            ([status(step=(1 << 53) - 1, rate=0.1)], "the job's step count is past what a request may name")):
        assert message(cr.plan_start, statuses, NOW) == said
    assert message(cr.plan_triggered_start, (1 << 53) - 1, 60.0, [], NOW, 0.1) == \
        "the job's step count is past what a request may name"
    assert cr.plan_triggered_start((1 << 53) - 2, 60.0, [], NOW, 0.1) == (1 << 53, (1 << 53) - 2)  # the last step


def test_zero_and_two_to_the_63_are_in_range_and_a_rank_a_nanosecond_on_counts_on():
    assert cr.check_trigger({**TRIGGER, "step": 0, "step_ns": 0, "median_ns": 0})["median_ns"] == 0
    refused(cr.check_trigger, {**TRIGGER, "step_ns": (1 << 63) + 1}, match="trigger step_ns")
    got = cr.parse_request(raw(start_step=0, seen_step=0, created_ns=0))
    assert (got["start_step"], got["created_ns"]) == (0, 0)
    refused(cr.parse_request, raw(created_ns=(1 << 63) + 1), match="created_ns must be")
    assert cr.parse_request(raw(created_ns=1 << 63))["created_ns"] == 1 << 63
    # 1 step/s, a second and a nanosecond ago at step 100: past 101, so 102; a 2 s lead at least 2 steps
    ns = {**status(rate=1.0, poll_s=0.0, cycle_s=0.0), "time_ns": NOW - S - 1}
    assert cr.plan_start([ns], NOW) == (104, 100)


def test_a_request_for_all_ranks_and_a_triggered_one():
    got = cr.new_request({"steps": 2}, [status(0), status(1)], NOW, "tensorboard")
    assert (got["ranks"], got["by"], got["created_ns"], len(got["id"])) == ("all", "tensorboard", NOW, 16)
    trig = cr.new_triggered_request(TRIGGER, 5, 100, 0.5, [], NOW, 0.05)
    assert trig == {"format": "canning-capture-request", "version": 1, "id": trig["id"], "by": "trigger",
                    "created_ns": NOW, "start_step": 105, "seen_step": 100, "steps": 5, "ranks": "all",
                    "activities": [], "record_shapes": False, "profile_memory": False, "with_stack": False,
                    "with_flops": False, "with_modules": False, "trigger": TRIGGER}
    assert cr.parse_request(json.dumps(trig).encode()) == trig
    # planned from the live ranks too: rank at step 300 polling every 3 s, steps of 0.5 s: (2 x 3 s + 2 s) / 0.5 s
    later = cr.new_triggered_request(TRIGGER, 5, 100, 0.5, [status(step=300, poll_s=3.0)], NOW, 0.05)
    assert (later["start_step"], later["seen_step"]) == (316, 300)
    refused(cr.new_triggered_request, {**TRIGGER, "kind": "x"}, 5, 100, 0.5, [], NOW, 0.05, match="trigger kind")
    assert cr.status_dict(rank=3) == {"format": "canning-capture-status", "rank": 3}
    e = cr.UnusableFile(".canning-capture/request.json", "not JSON")
    assert (str(e), e.file, e.problem) == (".canning-capture/request.json: not JSON", ".canning-capture/request.json",
                                           "not JSON")


def test_a_request_not_read_yet_holds_the_next_and_the_rate_limit_counts_two_polls():
    previous = request(50, id="a" * 16, created_ns=NOW - 1 * S)
    unread = [status(0, step=10, world=1)]
    assert cr.busy_reason(previous, unread, NOW) == (
        "a capture is in progress (waiting for the job to read the request (steps 50-52)); "
        "ask again once it is written")
    done = [status(0, state=cr.WRITTEN, request_id="a" * 16, min_interval_s=60.0, poll_s=2.0, world=1)]
    old = {**previous, "created_ns": NOW - 63 * S}  # 60 s + 2 x 2 s = 64 s
    assert cr.busy_reason(old, done, NOW) == "this job accepts one capture per 60 s; ask again in 1 s"


def test_the_whole_answer_for_a_request_and_each_ranks_words():
    mine = dict(request_id="a" * 16)
    req = {**request(50, id="a" * 16, created_ns=NOW - 10 * S, by="trigger"), "trigger": TRIGGER}
    wrote = status(0, state=cr.WRITTEN, windows=["w0"], message="wrote w0", **mine, world=1)
    got = cr.request_state(req, [wrote], NOW)
    assert got == {"id": "a" * 16, "by": "trigger", "created_ns": NOW - 10 * S, "state": cr.WRITTEN,
                   "message": "written: steps 50-52 on 1 of 1 ranks", "start_step": 50, "end_step": 52, "steps": 3,
                   "ranks": [{"rank": 0, "state": cr.WRITTEN, "message": "wrote w0", "windows": ["w0"], "step": 100}],
                   "written_by": [0], "trigger": TRIGGER}
    waiting = state_of([status(0, step=10, world=1)])
    assert waiting["state"] == "waiting"
    assert waiting["message"] == "waiting for the job to read the request (steps 50-52)"
    assert waiting["ranks"][0]["message"] == "has not read the request yet"
    missed = state_of([status(0, step=60, world=1)])["ranks"][0]
    assert missed["message"] == "did not read the request before step 50 (now at step 60)"
    newer = state_of([status(0, watch_since_ns=NOW, world=1)])["ranks"][0]
    assert newer["message"] == "this process started watching after the request was written: not acted upon"
    # 10 s and 5 ns after the request, polls of 5 s: just late
    just = {**status(0, step=50, poll_s=5.0, world=1), "time_ns": NOW + 5}
    assert state_of([just])["ranks"][0]["state"] == cr.MISSED
    five = state_of([status(r, state=cr.FAILED, message=f"m{r}", **mine, world=5) for r in range(5)])
    assert five["message"] == ("nothing written: rank 0 failed (m0); rank 1 failed (m1); rank 2 failed (m2); "
                               "rank 3 failed (m3)")  # four ranks named at most
