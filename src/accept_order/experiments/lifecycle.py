"""The one lifecycle every experiment goes through, around whatever load it drives (session.py's runs, burst's,
ramp's, reload's):

    evidence before -> start the server -> listeners -> load -> evidence after -> stop -> analyse -> result

`lifecycle` owns the order of start and stop, ending every process on success, error, Ctrl-C and SIGTERM
(teardown runs with signals deferred), and a worker that dies mid-run (one WorkerError naming it, with the counts
of what was driven). `Measured` is what it gathered around the load; `as_answered` the spec a result is kept
under; `result_or_exit` a result, or the exit of an attached server's worker carrying it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from ..core import environment
from ..core.errors import WorkerError, WorkerExited
from ..core.measures import Environment, WorkerCounters
from ..core.signals import deferred, holding, keep, release
from ..core.spec import DEFAULT_KIND, ServerSpec
from ..core.target import Target
from ..probes.evidence import EvidenceCapture
from ..servers.registry import Plan, elsewhere, known_by_replies, make_target, plan
from .partial import RunInterrupted

T = TypeVar("T")
R = TypeVar("R")


class Measured(NamedTuple):
    """What the lifecycle gathered around any load."""

    environment: Environment
    port: int
    pids: tuple[int, ...]
    counters: tuple[WorkerCounters, ...]
    evidence: dict[str, Any]
    unsettled: int
    wall_s: float
    exited: WorkerExited | None = None  # a worker of a server this tool did not start exited mid-run


def lifecycle(
    server: ServerSpec | Plan,
    drive: Callable[[Target], T],
    describe: Callable[[], str],
    build: Callable[[T, Measured], R],
    stamps: bool = False,
    partial: Callable[[], T] | None = None,
    look_busy: bool = False,
    cpu_limit: bool = False,
) -> R:
    """Start `server`, run `drive(target)`, stop, and return `build(what drive returned, what was measured)`.

    From the moment the load has finished until its result is built, signals are held (core/signals.py
    `holding`): a Ctrl-C, SIGTERM or SIGHUP then ends the run with RunInterrupted carrying the finished
    result, for the command to save and report before it exits 130/143/129, instead of losing it.
    `describe()` says how far the load got, for the message when a worker dies mid-run. When a worker of
    a server this tool did not start exits (WorkerExited), `partial()` is what the load got to: the run
    then ends like a finished one, with the exit in `Measured.exited` and in the evidence. A spec is resolved
    here; a plan (servers/registry.py `plan`) was resolved by the run that hands it. `cpu_limit`: the tool's
    cgroup's CPU limit and throttle are kept in evidence.machine, for a report that says them."""
    release()  # a previous variant's result, kept since its end: a signal that came meanwhile stops here
    resolved = plan(server)
    server = resolved.spec
    env = environment.current()
    started = time.perf_counter()
    # how long each worker was busy (probes/busy_waits.py), for the latency model where the workers do not time
    # their service themselves (this tool's own do)
    capture = EvidenceCapture(host=server.host, look_busy=look_busy and server.kind != DEFAULT_KIND)
    capture.before()  # counters before any worker exists; listeners and affinities while they run
    machine_before = environment.machine_state(cpu_limit)  # load average and steal: was the machine busy, stolen from?
    target = make_target(server, stamps=stamps)
    remote = elsewhere(target)
    here = remote is None  # a server on another host: its listeners and processes are not ours to read
    try:
        target.start()
        port = target.address[1]
        if remote is None:
            capture.started(port, list(target.pids))  # an attached server's namespace's counters, if not ours
        elif (read := remote.counters_reader()) is not None and remote.located.pids:
            capture.read_in(read, remote.located.pids[0])  # --target in another namespace of this machine
        exited: WorkerExited | None = None
        # A worker's death ends the run saying what the load drove, wherever it is seen (during the load, after
        # it: a busy machine delivers an exit late, or as the workers stop); an exit of a server this tool did
        # not start, where the load can say what it got to (partial), ends it as a run that was cut short.
        drove = lambda exc: WorkerError(f"{exc}; {describe()}", exc.index)  # noqa: E731
        try:
            outcome = drive(target)
        except WorkerError as exc:
            if partial is None or not isinstance(exc, WorkerExited):
                raise drove(exc) from None
            exited = WorkerExited(f"{exc}; {describe()}", exc.index, exc.after_s)
            outcome = partial()
        # What the load measured must not be lost while the workers are stopped and the result is built:
        # the first signal in that time is taken and travels with the result (later ones are never raised).
        with holding() as hold:
            try:
                target.check_alive()
            except WorkerError as exc:
                if partial is None or not isinstance(exc, WorkerExited):
                    raise drove(exc) from None
                exited = exited or exc  # after the last connection: the load's outcome is whole
            if remote is not None and remote.from_hosts:
                capture.back_to_ours()  # a coordinator's, said as such (render/evidence.py)
            elif remote is not None and (unread := remote.unread_counters()) is not None:
                capture.not_read(unread)  # ours are the client's, not the server's
            evidence = capture.after(port if here else 0, list(target.pids) if here else [])
            evidence["machine"] = {"before": machine_before, "after": environment.machine_state(cpu_limit)}
            counters = target.stop()
            if exited is None:
                try:
                    target.check_stopped()  # a worker that died at the very end must not pass for one that idled
                except WorkerError as exc:
                    raise drove(exc) from None
            else:
                pid = target.pids[exited.index] if exited.index is not None else None
                evidence["worker_exit"] = {
                    "worker": exited.index,
                    "pid": pid,
                    "after_s": exited.after_s,
                    "why": str(exited),
                }
            evidence.update(target.own_evidence())  # fd-pass's acceptor, a launched server's own log
            measured = Measured(
                env,
                port,
                tuple(target.pids),
                tuple(counters),
                evidence,
                target.unsettled,
                round(time.perf_counter() - started, 6),
                exited,
            )
            result = build(outcome, measured)
        if (cause := hold.taken()) is not None:
            raise RunInterrupted([result], cause)
        keep()  # on to its file: a signal from here on is held until it is saved (or the next load starts)
    finally:
        with deferred():
            capture.stop_looking()  # a run that failed before its evidence: its looks end here
            target.close()
            if (hosts := sys.modules.get("accept_order.loads.hosts.gateways")) is not None:
                hosts.close_kept()  # the client hosts its loads kept (loaded only where a load had --clients)
    return result


def as_answered(server: ServerSpec, answered: int) -> ServerSpec:
    """The spec a result is kept under: as many workers as answered (`answered`: the target's pids, or the
    longest per-worker count), when more did than -w said. Only a server elsewhere can: -w is the user's word
    for a server this host cannot see, and its replies are the server's own (servers/remote.py)."""
    if not known_by_replies(server) or answered <= server.workers:
        return server
    return server.replace(workers=answered)


def result_or_exit(result: R, m: Measured) -> R:
    """The result, or, when a worker of an attached server exited mid-run, its WorkerExited carrying the
    result (marked interrupted) for the command to report and save before it ends with that one line."""
    if m.exited is not None:
        m.exited.results = [result]
        raise m.exited
    return result
