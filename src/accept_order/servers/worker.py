"""The worker process: wait the mode's way, answer each connection with one line naming itself.

A worker keeps its counters in memory and sends them once, over its pipe, when it is told to stop
(SIGTERM). Per-connection reporting would cost a fifth of the connection rate and move the result. The
service time of each connection goes into a small histogram in memory (service_time.py: a few integer
operations per connection), reported with the counters.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..core.cpus import affinity, pin_self
from ..core.errors import PlanError
from ..core.forked import Connection
from ..core.processes import die_with_parent, ignore_supervisor_signals, unblock_signals
from ..core.service_time import ServiceTimes
from ..probes.work import spin
from .keepalive import KeptLoop
from .modes import Listeners, Mode
from .modes.base import Helper

# Shared memory, 3 slots per worker: its state (read by the supervisor to know when idle workers are
# asleep), how many connections it has accepted so far (for messages when a run stops early), and whether
# it should leave (a graceful restart: stop accepting, serve what it holds, exit); and a last slot the
# supervisor sets before it tells the workers to stop.
STARTING, WAITING, BUSY, RETURNING = 0, 1, 2, 3


def shared_slots(workers: int) -> int:
    return 3 * workers + 1


def accepts_slot(state: Any, index: int) -> int:
    return (len(state) - 1) // 3 + index


def leave_slot(state: Any, index: int) -> int:
    return 2 * (len(state) - 1) // 3 + index


# Test hook: ACCEPT_ORDER_FAULT="never-ready:1" or "die-on-accept:0" makes that worker misbehave.
FAULT_ENV = "ACCEPT_ORDER_FAULT"


class _Stop(Exception):
    """Raised by the SIGTERM handler to leave the wait, wherever the worker is blocked."""


def _stop_when_asked(state: Any) -> Any:
    """The SIGTERM handler: leave the wait and report, but only when the supervisor asked (it sets the last
    slot of the shared state first). A SIGTERM to the whole process group (timeout(1), systemd) is the
    supervisor's to act on: it stops the workers itself, in order, after keeping what was measured."""

    def on_sigterm(signum: int, frame: Any) -> None:
        if not state[len(state) - 1]:
            return  # not from the supervisor: keep serving; it will ask
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the report short
        raise _Stop

    return on_sigterm


class WorkerConfig:
    """What one worker is told as it starts (read in the forked child, never changed): a plain class, not a
    dataclass, whose methods Python 3.11 would compile at every start-up (issue 30); not a NamedTuple, whose
    `index` would shadow tuple.index."""

    def __init__(
        self,
        index: int,
        mode: Mode,
        listeners: Listeners,
        batch: int,
        work_us: int,
        work_iters: int,
        cpus: tuple[int, ...],
        stamps: bool = False,
        keepalive: bool = False,
    ) -> None:
        self.index = index
        self.mode = mode
        self.listeners = listeners
        self.batch = batch
        self.work_us = work_us
        self.work_iters = work_iters
        self.cpus = cpus
        self.stamps = stamps  # keep each accept's time (for serve's sequence; costs a list append)
        self.keepalive = keepalive  # each connection carries request lines until the client closes it (keepalive.py)


MAX_STAMPS = 1_000_000  # accept times a worker keeps for serve's sequence
FAULTS = ("never-ready", "die-on-accept")


def parse_fault(text: str | None = None) -> tuple[str, int] | None:
    """ACCEPT_ORDER_FAULT as (kind, worker index); None when unset; PlanError when malformed (checked by
    the pool before any worker starts, so a typo in the hook is one clear line, not a silent no-op)."""
    text = os.environ.get(FAULT_ENV, "") if text is None else text
    if not text:
        return None
    kind, _, target = text.partition(":")
    if kind not in FAULTS or not target.isdigit():
        raise PlanError(f"{FAULT_ENV}={text!r} is not KIND:INDEX with KIND one of {', '.join(FAULTS)}")
    return kind, int(target)


def _fault(index: int) -> str | None:
    fault = parse_fault()
    return fault[0] if fault and fault[1] == index else None


def _serve(
    cfg: WorkerConfig, batch: list[socket.socket], state: Any, index: int, reply: bytes, times: ServiceTimes
) -> None:
    # Each connection's service is timed from the start of its own turn to the moment its reply is ready:
    # one accepted in a batch waits for those before it, and that wait is queueing (the model's), not
    # service. The clock stops before the send: sending wakes the client, which may take this CPU at once,
    # and that wait (up to a scheduler tick) is the machine's, not the work's.
    clock = time.perf_counter_ns
    for conn in batch:
        began = ready = clock()
        try:
            spin(cfg.work_us, cfg.work_iters)
            ready = clock()
            conn.sendall(reply)
        except OSError:
            pass  # the client gave up; it counts the failure on its side
        finally:
            # Leave BUSY before the client can see EOF: a client that has its answer must not
            # find this worker still marked busy (the supervisor's settle would not wait for it).
            state[index] = RETURNING
            conn.close()
            times.add((ready - began) // 1000)


def _my_turn(turn: int) -> bool:
    """Wait until the pool gives this worker its turn to register (one byte); False if it closed the pipe
    without (it is ending the pool)."""
    try:
        return bool(os.read(turn, 1))
    finally:
        os.close(turn)


def worker_main(cfg: WorkerConfig, pipe: Connection, state: Any, turn: int = -1, others: Sequence[int] = ()) -> None:
    """Worker `cfg.index`'s life: set up, wait for its turn (`turn`, a pipe the pool writes once the workers
    before it wait), register its wait, say it is ready, serve until told to stop, report. `others`: the pool's
    ends of the turn pipes (its own, and those of the workers forked before it), which it closes."""
    for fd in others:
        os.close(fd)
    ignore_supervisor_signals()
    signal.signal(signal.SIGTERM, _stop_when_asked(state))
    index, pid = cfg.index, os.getpid()
    reply = f"worker {index} pid {pid}\n".encode()
    wakeups = accepts = empty = max_batch = 0
    accepted_slot = accepts_slot(state, index)
    leaving = leave_slot(state, index)
    stamps: list[int] | None = [] if cfg.stamps else None
    times = ServiceTimes()
    try:  # from the unblocking on, a SIGTERM raises _Stop: every statement after it is inside a try
        unblock_signals()  # blocked by the supervisor across the fork (processes.start_child)
        die_with_parent()
        fault = _fault(index)
        if cfg.cpus:  # like nginx's worker_cpu_affinity
            pin_self(cfg.cpus[index % len(cfg.cpus)])
        cfg.listeners.keep_only(index)
        if turn >= 0 and not _my_turn(turn):  # registration order is worker order: nothing above depends on it
            return
        # A worker that serves each kept connection to its end accepts one at a time, as Apache prefork
        # does: a batch would take connections it cannot serve until the one before has closed.
        kept_one_by_one = cfg.keepalive and not cfg.mode.multiplexes
        waiter = cfg.mode.waiter(index, cfg.listeners, 1 if kept_one_by_one else cfg.batch)
    except _Stop:
        return
    except Exception as exc:
        # Tell the supervisor (which names this worker in one line) instead of printing a traceback. It
        # answers with SIGTERM at once: that must not land inside this handler as a _Stop traceback.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        pipe.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    kept: KeptLoop | None = None
    try:
        if fault == "never-ready":
            signal.pause()
        pipe.send(("ready", {"pid": pid, "affinity": affinity(pid)}))
        if cfg.keepalive:
            kept = KeptLoop(waiter, cfg.mode.multiplexes, reply, (cfg.work_us, cfg.work_iters), times, state, index)
            kept.run(lambda: bool(state[leaving]), lambda n: state.__setitem__(accepted_slot, n))
        while kept is None:
            if state[leaving]:  # a graceful restart: close the listener, serve what was handed over, go
                held = waiter.leave()
                accepts += len(held)
                _serve(cfg, held, state, index, reply, times)
                break
            state[index] = WAITING
            batch = waiter.wait()
            state[index] = BUSY if batch else RETURNING
            wakeups += 1
            if not batch:
                empty += 1
                continue
            accepts += len(batch)
            state[accepted_slot] = accepts
            if stamps is not None and len(stamps) < MAX_STAMPS:
                stamps.extend([time.monotonic_ns()] * len(batch))
            max_batch = max(max_batch, len(batch))
            if fault == "die-on-accept":
                os._exit(3)
            _serve(cfg, batch, state, index, reply, times)
    except _Stop:
        pass
    counted = {"wakeups": wakeups, "accepts": accepts, "empty": empty, "max_batch": max_batch}
    if kept is not None:  # with its requests and the most connections it held at once
        counted = kept.counters()
    try:
        pipe.send(
            (
                "counters",
                {
                    "index": index,
                    "pid": pid,
                    **counted,
                    "service_us": times.pairs(),
                    "service_sum_us": times.sum_us,
                    **({"stamps": stamps} if stamps is not None else {}),
                },
            )
        )
    except OSError:
        pass  # the supervisor is gone; nobody to report to


def helper_main(factory: Callable[[], Helper], pipe: Connection, state: Any) -> None:
    """A mode's own process (fd-pass's acceptor): runs until the supervisor stops it, then reports."""
    ignore_supervisor_signals()
    signal.signal(signal.SIGTERM, _stop_when_asked(state))
    helper: Helper | None = None
    try:
        unblock_signals()
        die_with_parent()
        helper = factory()
        pipe.send(("ready", {"pid": os.getpid(), "affinity": affinity(os.getpid())}))
        helper.run()
    except _Stop:
        pass
    except Exception as exc:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        pipe.send(("failed", f"{type(exc).__name__}: {exc}"))
        return
    try:
        pipe.send(("counters", helper.report() if helper is not None else {}))
    except OSError:
        pass
