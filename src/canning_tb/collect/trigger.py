"""Triggers of ps.on_demand(trigger=...): the job asks for a capture itself, when its own steps say so.

The profile times each step with one time.perf_counter() at prof.step() (no profiler runs) and gives the
trigger that step's time; when the rule fires and the guards allow, the capture's watch thread writes a
request as the Capture button does (capture/watch.py), so every rank records the same next `steps` steps.

Rules: when_slow (a step slower than a robust baseline of the recent normal steps), when_every (every N
steps), when (the job's own function). Guards, the same for each: at most `max_per_hour` captures in any
hour, none once the run folder holds `max_bytes`, none for `cooldown_steps` steps after the last one (or
after a capture ends), never during a capture (the profile does not ask while one is planned or recorded).
A rule that raises is said once (stderr) and never reaches the training loop.
"""
from __future__ import annotations

import statistics
import time
from collections import deque

MAD_TO_SIGMA = 1.4826  # a normal distribution's standard deviation is 1.4826 times its median absolute deviation
MIN_BASELINE = 16      # normal steps the baseline holds before when_slow decides anything
HOUR_S = 3600.0


def ms(seconds: float) -> str:
    """A duration for people: "81 ms", "4.2 ms", "1.5 s"."""
    if seconds >= 10:
        return f"{seconds:.0f} s"
    if seconds >= 1:
        return f"{seconds:.1f} s"
    value = seconds * 1e3
    return f"{value:.0f} ms" if value >= 10 else f"{value:.2g} ms"


class Trigger:
    """What the rules share: the guards, and what a firing hands to the capture (`check`)."""

    kind = ""

    def __init__(self, *, steps: int = 3, cooldown_steps: int = 200, max_per_hour: int = 3,
                 max_bytes: int = 2 << 30, clock=time.monotonic, say=None):
        from canning_tb.capture.request import MAX_STEPS
        if not 1 <= steps <= MAX_STEPS or cooldown_steps < 0 or max_per_hour < 1 or max_bytes < 0:
            raise ValueError(f"trigger: steps={steps} (1..{MAX_STEPS}), cooldown_steps={cooldown_steps} (>= 0), "
                             f"max_per_hour={max_per_hour} (>= 1), max_bytes={max_bytes} (>= 0)")
        self.steps, self.cooldown_steps = int(steps), int(cooldown_steps)
        self.max_per_hour, self.max_bytes = int(max_per_hour), int(max_bytes)
        self._clock = clock
        self._say = say
        self._fired: deque = deque()   # clock times of the firings within the last hour
        self._quiet_until = -1         # no firing before this step (cool-down)
        self._said: set = set()        # what was said already (each kind of skip, a failing rule): once each

    def decide(self, step_s: float, step: int) -> dict | None:
        """The rule: {kind, step, step_ns, median_ns, reason} when this step calls for a capture."""
        raise NotImplementedError

    def check(self, step_s: float, step: int, run_bytes: int | None = None, held=None) -> dict | None:
        """The trigger (as a request holds it) when `step`, which took `step_s`, fires it and the guards
        allow a capture now; else None. Never raises. held(): asked only once the rule fired, (key, why)
        when the job would refuse a capture now (its min_interval_s): skipped, not counted in the hour."""
        try:
            fired = self.decide(step_s, step)
        except Exception as e:  # the job's rule (ps.when) or a bad value: said once, the training goes on
            self._once("error", f"trigger {self!r} failed at step {step}: {type(e).__name__}: {e}; "
                                f"it is asked again at the next steps, the training goes on")
            return None
        if fired is None or step < self._quiet_until:
            return None
        why = held() if held is not None else None
        if why is not None:
            self._quiet_until = step + 1 + self.cooldown_steps
            self._once(("held", why[0]), f"trigger: {fired['reason']}; not asked: {why[1]}")
            return None
        now = self._clock()
        while self._fired and now - self._fired[0] >= HOUR_S:
            self._fired.popleft()
        if len(self._fired) >= self.max_per_hour:
            self._once(("hour", self._fired[0]), f"trigger: {fired['reason']}; not asked: {self.max_per_hour} "
                                                  f"captures were triggered within the hour (max_per_hour)")
            return None
        if run_bytes is not None and run_bytes >= self.max_bytes:
            self._once("bytes", f"trigger: {fired['reason']}; not asked, nor any more: the run folder holds "
                                f"{run_bytes / 2**20:.0f} MiB, the budget is {self.max_bytes / 2**20:.0f} MiB "
                                f"(max_bytes)")
            return None
        self._fired.append(now)
        self._quiet_until = step + 1 + self.cooldown_steps
        return fired

    def captured(self, step: int) -> None:
        """A capture ended at `step`: the cool-down counts from here."""
        self._quiet_until = max(self._quiet_until, step + 1 + self.cooldown_steps)

    def _once(self, key, message: str) -> None:
        if key not in self._said:
            self._said.add(key)
            if self._say is not None:
                self._say(message)
            else:
                from canning_tb.capture.watch import say
                say(message)

    def _firing(self, step: int, step_s: float, reason: str, median_s: float | None = None) -> dict:
        """The trigger as the request and the manifest hold it."""
        return {"kind": self.kind, "step": step, "step_ns": round(step_s * 1e9),
                "median_ns": None if median_s is None else round(median_s * 1e9), "reason": reason}

    def _guards(self) -> str:
        return f"steps={self.steps}, cooldown_steps={self.cooldown_steps}, max_per_hour={self.max_per_hour}"


MIN_EXCESS_S = 0.010  # ours: a slow step worth a capture is at least 10 ms over the median


class WhenSlow(Trigger):
    """A step slower than the baseline: over median + k x the spread (MAD, in standard deviations) AND at
    least `ratio` times the median. The baseline is the median and MAD of the last `window` normal steps
    (a slow step is not one), after the first `warmup` steps (compilation, caches), and refreshed every
    `refresh` steps: the step itself costs a comparison and an append."""

    kind = "slow"

    def __init__(self, *, k: float = 6.0, ratio: float = 2.0, warmup: int = 20, window: int = 200,
                 refresh: int = 50, min_excess_s: float = MIN_EXCESS_S, **guards):
        super().__init__(**guards)
        if not k >= 0 or not ratio >= 1 or warmup < 0 or not MIN_BASELINE <= window <= 100_000 or refresh < 1 \
                or not min_excess_s >= 0:
            raise ValueError(f"when_slow: k={k} (>= 0), ratio={ratio} (>= 1), warmup={warmup} (>= 0), "
                             f"window={window} ({MIN_BASELINE}..100000), refresh={refresh} (>= 1), "
                             f"min_excess_s={min_excess_s} (>= 0)")
        self.k, self.ratio, self.warmup, self.refresh = float(k), float(ratio), int(warmup), int(refresh)
        self.min_excess = float(min_excess_s)
        self.normal: deque = deque(maxlen=int(window))
        self.median = self.spread = None   # seconds; None until the baseline holds MIN_BASELINE steps
        self.threshold = float("inf")
        self._seen = 0
        self._stale = 0

    def decide(self, step_s: float, step: int) -> dict | None:
        self._seen += 1
        if self._seen <= self.warmup:
            return None
        if step_s <= self.threshold:
            self.normal.append(step_s)
            self._stale += 1
            if self._stale >= self.refresh or self.median is None and len(self.normal) >= MIN_BASELINE:
                self._rebase()
            return None
        median = self.median
        return self._firing(step, step_s, f"step {step:,} took {ms(step_s)}, {step_s / median:.1f}x the median "
                                          f"{ms(median)}", median)

    def _rebase(self) -> None:
        self._stale = 0
        if len(self.normal) < MIN_BASELINE:
            return
        median = statistics.median(self.normal)
        spread = MAD_TO_SIGMA * statistics.median([abs(x - median) for x in self.normal])
        self.median, self.spread = median, spread
        # and never within MIN_EXCESS_S of the median: on steps of a few ms, a scheduler hiccup doubles one
        self.threshold = max(median + self.k * spread, self.ratio * median, median + self.min_excess)

    def __repr__(self) -> str:
        return f"when_slow(k={self.k:g}, ratio={self.ratio:g}, warmup={self.warmup}, {self._guards()})"


class WhenEvery(Trigger):
    """Every `every` steps (periodic sampling); the guards still hold (raise max_per_hour for many)."""

    kind = "every"

    def __init__(self, every: int, **guards):
        guards.setdefault("cooldown_steps", 0)
        super().__init__(**guards)
        if every < 1:
            raise ValueError(f"when_every: steps={every} (>= 1)")
        self.every = int(every)

    def decide(self, step_s: float, step: int) -> dict | None:
        if step == 0 or step % self.every:
            return None
        return self._firing(step, step_s, f"every {self.every:,} steps: step {step:,} (took {ms(step_s)})")

    def __repr__(self) -> str:
        return f"when_every(steps={self.every}, {self._guards()})"


class When(Trigger):
    """When the job's own function `rule(step_time_s, step)` says so."""

    kind = "when"

    def __init__(self, rule, **guards):
        super().__init__(**guards)
        if not callable(rule):
            raise ValueError("when: the rule must be a function of (step_time_s, step)")
        self.rule = rule
        self.name = getattr(rule, "__qualname__", "") or type(rule).__name__

    def decide(self, step_s: float, step: int) -> dict | None:
        if not self.rule(step_s, step):
            return None
        return self._firing(step, step_s, f"step {step:,} took {ms(step_s)}: the job's rule {self.name[:80]} said so")

    def __repr__(self) -> str:
        return f"when({self.name}, {self._guards()})"


def when_slow(*, k: float = 6.0, ratio: float = 2.0, warmup: int = 20, window: int = 200, steps: int = 3,
              cooldown_steps: int = 200, max_per_hour: int = 3, max_bytes: int = 2 << 30,
              min_excess_s: float = 0.010) -> WhenSlow:
    """Capture the next `steps` steps when a step takes longer than median + k x spread of the recent normal
    steps AND at least `ratio` x their median AND `min_excess_s` more than it (after `warmup` steps; `window`:
    normal steps in the baseline)."""
    return WhenSlow(k=k, ratio=ratio, warmup=warmup, window=window, steps=steps, cooldown_steps=cooldown_steps,
                    max_per_hour=max_per_hour, max_bytes=max_bytes, min_excess_s=min_excess_s)


def when_every(steps: int, *, capture_steps: int = 3, cooldown_steps: int = 0, max_per_hour: int = 3,
               max_bytes: int = 2 << 30) -> WhenEvery:
    """Capture `capture_steps` steps every `steps` steps (periodic sampling), within the guards."""
    return WhenEvery(steps, steps=capture_steps, cooldown_steps=cooldown_steps, max_per_hour=max_per_hour,
                     max_bytes=max_bytes)


def when(rule, *, steps: int = 3, cooldown_steps: int = 200, max_per_hour: int = 3,
         max_bytes: int = 2 << 30) -> When:
    """Capture the next `steps` steps when rule(step_time_s, step) is true, within the guards."""
    return When(rule, steps=steps, cooldown_steps=cooldown_steps, max_per_hour=max_per_hour, max_bytes=max_bytes)
