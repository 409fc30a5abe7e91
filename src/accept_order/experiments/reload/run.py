"""The reload experiment: a steady closed-loop load, and one worker made to go in the middle of it.

Runs inside the private network namespace the caller entered (netns.enter_private), where it sets
net.ipv4.tcp_migrate_req for each run; the host's setting is never read for writing, never changed.
The lifecycle (start, evidence, stop, every process ended on every path) is lifecycle.py's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core import netns
from ...core.errors import PlanError
from ...core.spec import DEFAULT_KIND, ConcurrentLoad, ServerSpec
from ...core.totals import loops_ran
from ...loads.drive_loop import TICK_S
from ...servers.kind_option_checks import shared
from ...servers.registry import KINDS, mode_info, runnable
from ..lifecycle import Measured, lifecycle
from ..session import Loading, RunInterrupted, Tick, drive_load, run_each
from .result import GONE_TIMEOUT_S, HOWS, ReloadRun

if TYPE_CHECKING:
    from ...core.load_summary import LoadSummary
    from ...core.measures import WorkerCounters


@dataclass(frozen=True)
class ReloadPlan:
    """What goes wrong, and when: worker `worker` goes `how`, `at` (a share of the load's duration) in."""

    how: str = "leave"
    migrate: int = 0
    worker: int = 0
    at: float = 0.5

    def validated(self, server: ServerSpec, load: ConcurrentLoad) -> ReloadPlan:
        if self.how not in HOWS:
            raise PlanError(f"--how is one of {', '.join(HOWS)}, got {self.how!r}")
        if self.migrate not in (0, 1):
            raise PlanError(f"--migrate settings are 0 and 1, got {self.migrate!r}")
        if not 0 <= self.worker < server.workers:
            raise PlanError(f"--worker must be a worker index, 0 to {server.workers - 1}, got {self.worker}")
        if server.workers < 2:
            raise PlanError("reload needs at least 2 workers: one to go, one to keep serving")
        if not 0 < self.at < 1:
            raise PlanError(f"--at must be between 0 and 1 (a share of the duration), got {self.at}")
        if load.duration_s is None:
            raise PlanError("reload runs for a --duration (the worker goes part-way through it)")
        if load.duration_s < (shortest := self.shortest_duration()) - 1e-9:
            raise PlanError(
                f"--duration {load.duration_s * 1000:g} ms is too short for reload to see a worker go: the run "
                f"looks every {TICK_S * 1000:g} ms to tell it, so the load must run on a look past the moment --at "
                f"names; the shortest --duration at --at {self.at:g} is {math.ceil(shortest * 1000 - 1e-6)} ms"
            )
        if server.kind != DEFAULT_KIND:
            raise PlanError("reload makes the built-in workers go; --server nginx is not supported by it yet")
        return self

    def shortest_duration(self) -> float:
        """The shortest --duration (s) in which the worker is told to go with the load still running. The run tells it
        at a look, every TICK_S: the first look at or after `at` of the duration, TICK_S in at the soonest, up to
        TICK_S after `at`. A load of 1 ms had its worker told after it had ended (nothing measured of the going);
        the load must last a look past both."""
        return max(2 * TICK_S, TICK_S / (1 - self.at))


def plans(
    server: ServerSpec, modes: Sequence[str], hows: Sequence[str], migrate: Sequence[int], given: Collection[str] = ()
) -> list[Any]:
    """(spec, plan) for every mode x way of going x migration setting; the setting only changes anything
    for a queue per worker, so a shared-queue mode runs once, with the kernel's default (0). Each mode's spec
    has the kind options it reads (one none of the modes reads is refused, one in `given` even at its default:
    kind_option_checks.shared)."""
    out = []
    for spec in shared([server.replace(mode=mode) for mode in modes], KINDS, given):
        meta = mode_info(DEFAULT_KIND, spec.mode)
        settings = list(migrate) if meta.queue == "per-worker" else [0]
        for how in hows:
            for value in settings:
                out.append((spec, ReloadPlan(how=how, migrate=value)))
    return out


def available(modes: Sequence[str] | None) -> tuple[list[str], dict[str, str]]:
    return runnable(DEFAULT_KIND, modes)


def run_reload(server: ServerSpec, load: ConcurrentLoad, plan: ReloadPlan, on_tick: Tick | None = None) -> ReloadRun:
    """One mode's run: set tcp_migrate_req (in this namespace), load, make the worker go, count."""
    from ...servers.pool import WorkerPool

    server = server.validated()
    load = load.validated()
    plan = plan.validated(server, load)
    netns.write_sysctl(netns.MIGRATE_REQ, str(plan.migrate))
    assert load.duration_s is not None
    went: dict[str, Any] = {}
    loading = Loading()

    def drive(target: Any) -> LoadSummary:
        assert isinstance(target, WorkerPool)

        def tick(done: int, elapsed: float) -> None:
            if not went and elapsed >= plan.at * (load.duration_s or 0):
                started = time.monotonic()
                gone = target.retire(plan.worker, plan.how, GONE_TIMEOUT_S)
                went.update(at_s=round(elapsed, 3), gone_s=round(time.monotonic() - started, 3) if gone else None)
                went["accepted"] = target.accepted_by(plan.worker)
                if gone:  # the others' count from here on: whether they accepted after it, and until when
                    went["others"] = went["others_at_gone"] = _others_accepted(target, plan.worker)
            elif "others" in went and (now := _others_accepted(target, plan.worker)) != went["others"]:
                went.update(others=now, moved_s=round(elapsed, 3))
                went.setdefault("first_s", round(elapsed, 3))  # how soon they took the queue the kill left
            elif "others" in went and "first_s" not in went:
                went["still_s"] = round(elapsed, 3)  # the last look that found they had accepted none since
            if on_tick:
                on_tick(done, elapsed)

        return drive_load(target, load, server.workers, tick, loading)

    return lifecycle(server, drive, loading.describe, lambda outcome, m: _result(plan, server, load, outcome, m, went))


def _result(
    plan: ReloadPlan, server: ServerSpec, load: ConcurrentLoad, outcome: LoadSummary, m: Measured, went: dict[str, Any]
) -> ReloadRun:
    served = outcome.served
    meta = mode_info(DEFAULT_KIND, server.mode)
    passes = "acceptor" in m.evidence
    result = ReloadRun(
        server=server,
        load=load,
        how=plan.how,
        migrate=plan.migrate,
        queue=meta.queue,
        passes=passes,
        worker=plan.worker,
        at_s=went.get("at_s"),
        gone_s=went.get("gone_s"),
        held=_held(plan, went, served, m.evidence) if went else None,
        served=served,
        finished=sum(d.requests for d in outcome.drivers),  # the drivers' own count, checked against driven
        errors=dict(outcome.errors),
        counters=dict(m.evidence.get("counters", {})),
        worker_counters=m.counters,
        environment=m.environment,
        wall_s=outcome.wall_s,
        evidence=m.evidence,
        interrupted=outcome.interrupted,
        held_exact=passes,
        client_cpu_us=outcome.client_cpu_us,
        loop=loops_ran(outcome.drivers) or None,
        others_after=_others_after(plan, went, m.counters),
        others_last_s=went.get("moved_s"),
        others_first_s=went.get("first_s"),
        others_still_s=went.get("still_s"),
    )
    if isinstance(outcome.interruption, KeyboardInterrupt):
        raise RunInterrupted([result], outcome.interruption)
    return result


def _others_accepted(pool: Any, gone: int) -> int:
    """What the workers other than `gone` have accepted so far, as they last published it."""
    return sum(pool.accepted_by(i) for i in range(len(pool.procs)) if i != gone)


def _others_after(plan: ReloadPlan, went: dict[str, Any], counters: Sequence[WorkerCounters]) -> int | None:
    """Connections the other workers accepted after the one that went was gone, by their own counts at the end
    (None: it never went, or not within the wait, or a worker did not count its accepts)."""
    if "others_at_gone" not in went:
        return None
    final = [c.accepts for c in counters if c.index != plan.worker]
    if not final or any(n is None for n in final):
        return None
    return max(0, sum(n for n in final if n is not None) - int(went["others_at_gone"]))


def _held(plan: ReloadPlan, went: dict[str, Any], served: tuple[int, ...], evidence: dict[str, Any]) -> int | None:
    """Connections the killed worker had and had not answered: handed to it by the acceptor (fd-pass: exact),
    or accepted by it, minus what it answered: a lower bound, since a worker publishes its count once a whole
    batch is accepted, and io_uring's kernel accepts for a ring before its worker has read the completion."""
    if plan.how != "kill":
        return 0
    acceptor = evidence.get("acceptor")
    if acceptor is not None:
        passed = acceptor.get("passed")
        return passed[plan.worker] - served[plan.worker] if isinstance(passed, list) else None
    accepted = went.get("accepted")
    return None if accepted is None else max(0, accepted - served[plan.worker])


def reload_runs(
    variants: Sequence[tuple[ServerSpec, ReloadPlan]],
    load: ConcurrentLoad,
    on_run: Callable[[ServerSpec, ReloadPlan], Tick | None] | None = None,
) -> list[ReloadRun]:
    return run_each(variants, lambda v: run_reload(v[0], load, v[1], on_run(*v) if on_run else None))
