"""What 'every step held' rests on where no --p99 or --p999 was given and the tail rose all the same: a hold is then
failures and rate alone, and 'the breaking point is further out' read as the server's limit beyond the ramp.
'ramp --server caddy --rates 500,2000,6000 --step 2s' (Debian's Caddy, 2 CPUs, load 4.5): 6000/s got 5519/s,
its p99 321.54 ms against 4.18 ms at 500/s, up to 537 connections in its accept queue (172 of the 12,000 due
never started), every step 'held' and 'the breaking point is further out'."""

from __future__ import annotations

from .result import RampResult, RampStep
from .step_verdict import KEPT_RATE

TAIL_ROSE = 10.0  # a last step's p99 this many times an earlier held step's lowest is a tail the holds did not judge


def _offered(step: RampStep) -> str:
    return f"{step.offered:g}/s" if step.kind == "rate" else f"{step.offered:g} in flight"


def hold_rule(result: RampResult, last: RampStep) -> str:
    """What a step of this ramp was held to, in words."""
    errors = result.plan.get("max_errors") or 0
    failed = "nothing failed" if not errors else f"no more than {errors} failed"
    rate = f" and it finished {KEPT_RATE:.0%} of the rate offered" if last.kind == "rate" else ""
    return f"a step holds where {failed}{rate}"


def tail_unjudged(result: RampResult) -> str | None:
    """Where every step held with no tail limit given and the last step's p99 is TAIL_ROSE times an earlier
    one's, what follows 'Every step held, up to X': the rule the holds kept and the rise; None otherwise (a limit
    given, or a tail that did not rise)."""
    if result.plan.get("p99_ms") or result.plan.get("p999_ms"):
        return None
    steps = [s for s in result.steps if not s.cut_short and s.p99_us is not None]
    if len(steps) < 2:
        return None
    last = steps[-1]
    low = min(steps[:-1], key=lambda s: s.p99_us or 0)
    if not low.p99_us or last.p99_us is None or last.p99_us < TAIL_ROSE * low.p99_us:
        return None
    judged = "failures and rate" if last.kind == "rate" else "failures"
    return (
        f"({hold_rule(result, last)}; no --p99 or --p999 was given), but its p99 rose to {last.p99_us / 1000:.2f} ms "
        f"at {_offered(last)}, {last.p99_us / low.p99_us:.0f}× the {low.p99_us / 1000:.2f} ms of {_offered(low)}: "
        f"by {judged} alone, the breaking point is further out"
    )
