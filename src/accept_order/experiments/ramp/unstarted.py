"""The connections an open-loop step had due that never started, as latency says them of a timed open loop
(latency/result.unstarted): 'ramp --server caddy --rates 500,2000,6000 --step 2s' drove 11,828 of the 12,000 due at
6000/s (its --in-flight cap full while Caddy's accept queue held up to 537), and the report said nothing of the 172;
its got/s counted only the connections driven, so the step read as finishing 92% of the rate without them."""

from __future__ import annotations

from .result import RampResult, RampStep


def unstarted(step: RampStep, step_s: float, drivers: int) -> tuple[int, int]:
    """(never started, due) of one open-loop step of `step_s` seconds: due, the rate offered to the hosts whose
    connections are counted over the step; (0, due) where the shortfall is within what `drivers` processes may
    each stop one short at the step's deadline, and for a closed loop's step or one a stop cut short."""
    if step.kind != "rate" or step.interrupted:
        return 0, 0
    due = round(step.offered_reported * step_s)
    missing = due - step.driven
    return (missing, due) if missing > drivers * max(1, len(step.hosts)) else (0, due)


def unstarted_line(result: RampResult) -> str | None:
    """One sentence of the steps whose due connections did not all start (None: every one did, or no step length)."""
    step_s, drivers = result.plan.get("step_s"), result.plan.get("driver_procs")
    if not isinstance(step_s, int | float) or not isinstance(drivers, int):
        return None
    said = []
    for step in result.steps:
        missing, due = unstarted(step, float(step_s), drivers)
        if missing:
            said.append(f"{step.offered:g}/s: {missing:,} of the {due:,} due in its {step_s:g} s")
    return f"Due but never started (not in the figures): {'; '.join(said)}" if said else None
