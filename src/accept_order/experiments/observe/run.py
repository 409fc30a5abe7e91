"""`observe`: a running server's own traffic, passively, for a while: who accepts what, per worker.

Nothing is driven at the server and nothing signals it. The kernel counts each worker's accepts on
tracepoints (probes/accept_watch.py; per thread for a threaded server); /proc gives each worker's CPU and
context switches; netlink (or /proc/PID/net) the listen queue's depth, sampled every 100 ms; the server's
namespace's netstat its listen overflows. Without root or bpftrace, the connections each worker holds are
sampled from its fd table instead, and the result says it is approximate. Whether traced or not, the load
each worker carries is sampled too (load.py): the connections it holds, and the bytes and data segments
they move, from inet_diag's tcp_info and the workers' fd tables, at a pace set by what a sample costs.

Every interval (a second) the result so far goes to `on_snapshot` (the command's live view). Ctrl-C or
SIGTERM ends the observation early: RunInterrupted carries the result, marked interrupted. Its state, and the
result so far, are observer.py's Observer.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from contextlib import ExitStack
from typing import NamedTuple

from ...core.errors import PlanError
from ...core.handoff import HandOffRead
from ...core.signals import deferred, holding, keep
from ...core.spec import MAX_DURATION_S, check_range
from ...probes.accept_watch import ThreadCounts
from ...probes.serving import check_pid
from ...servers.registry import recognise
from ...servers.watched import gone
from ..session import RunInterrupted
from .handoff import read_handoff
from .newcomers import Newcomers
from .observer import INTERVAL_S, Observer, Snapshot
from .reloaded import boot_clock, netns_of, reload_note, reloaded, replaced_note
from .result import ObserveResult
from .server import every_worker_exited, find_server

RELOAD_SLACK_S = 0.06  # a reload's start as the result keeps it (after_s, to 0.1 s) may be this much late


def observe(
    pid: int | None = None,
    port: int | None = None,
    duration_s: float = 30.0,
    interval_s: float = INTERVAL_S,
    trace: bool = True,
    on_snapshot: Snapshot | None = None,
    until: threading.Event | None = None,
) -> ObserveResult:
    """Observe the server behind `pid` or `port` for `duration_s` (or until `until` is set). Ctrl-C or
    SIGTERM: RunInterrupted with the result so far. NotServing when nothing serves there."""
    check(pid, port, duration_s, interval_s)
    chosen_at = boot_clock()  # a process of the server's started after this, holding its listener, is a reload's
    watched = find_server(pid, port)
    handoff = read_handoff(watched)  # its config, read while the server runs: saved with the result
    with ExitStack() as stack:
        finish = Finish(handoff, netns_of(watched.netns_pid), chosen_at)
        observer = Observer(watched, trace, duration_s, interval_s, Newcomers(watched, finish.netns, chosen_at))
        stack.callback(observer.close)
        try:
            observer.start()
            if on_snapshot:
                on_snapshot(observer.result())
            _loop(observer, on_snapshot, until)
        except KeyboardInterrupt as cause:
            if not observer.started:  # stopped before anything was measured: nothing to keep
                raise
            with deferred():
                result = _finish(observer, finish, interrupted=True)
            raise RunInterrupted([result], cause) from None
        with holding() as hold:  # the window is over: a signal now must not lose what was observed
            result = _finish(observer, finish)
        if (late := hold.taken()) is not None:
            raise RunInterrupted([result], late)
        keep()  # on to its file: held until it is saved
        return result
    raise AssertionError("unreachable")


def check(pid: int | None, port: int | None, duration_s: float, interval_s: float) -> None:
    """PlanError for what cannot be observed: neither or both of pid and port, a duration out of range."""
    if (pid is None) == (port is None):
        raise PlanError("give the server's pid or its --port (one of them)")
    if pid is not None:
        check_pid(pid)
    if port is not None:
        check_range("--port", port, 1, 65535)
    check_range("--duration", duration_s, 0.001, MAX_DURATION_S, "s")
    check_range("--interval", interval_s, 0.1, 3600, "s")


def _loop(observer: Observer, on_snapshot: Snapshot | None, until: threading.Event | None) -> None:
    """Sample the queue (and, untraced, the holdings) at their paces and close an interval on time: a slow
    look at the holdings is not started when it would delay the next interval (which takes one itself)."""
    end = observer.started + observer.duration_s
    next_tick = observer.started + observer.interval_s
    next_sample = next_hold = observer.started
    next_load = observer.started + observer.load.every_s
    load_waited = False  # a look at the load put off until the interval closed: taken right after it
    while not observer.everyone_gone():
        now = time.monotonic()
        if now >= end or (until is not None and until.is_set()):
            return
        if now >= next_tick:
            observer.tick()
            next_tick += observer.interval_s
            next_hold = time.monotonic() + observer.hold_every_s
            if on_snapshot:
                on_snapshot(observer.result())
        if now >= next_sample:
            observer.sample()
            next_sample = max(next_sample + observer.every_s, now)
        if observer.holdings is not None and now >= next_hold:
            if now + observer.hold_cost_s < next_tick:
                observer.sample_holdings()
                next_hold = max(next_hold + observer.hold_every_s, now)
            else:
                next_hold = next_tick  # the interval's own look comes first
        if observer.load.readable and now >= next_load:
            if now + observer.load.cost_s < next_tick or load_waited:
                observer.sample_load()
                next_load, load_waited = time.monotonic() + observer.load.every_s, False
            else:  # after the interval closes: a slow look must not delay it (nor be put off for ever)
                next_load, load_waited = next_tick, True
        due = min(next_sample, next_tick, end, next_hold if observer.holdings is not None else end)
        due = min(due, next_load) if observer.load.readable else due
        wait = max(0.0, due - time.monotonic())
        if until is not None:
            until.wait(wait)
        else:
            time.sleep(wait)


class Finish(NamedTuple):
    """What the end needs from the start: `handoff`, what the server's config said of handing on (handoff.py); the
    server's network namespace and when its workers were chosen, to find a reload's newcomers (reloaded.py)."""

    handoff: HandOffRead | None
    netns: int | None
    chosen_at: float


def _finish(observer: Observer, finish: Finish, interrupted: bool = False) -> ObserveResult:
    """The last interval, with the exact totals bpftrace prints as it stops, the reading of the hand-off, and a
    reload's newcomers, looked for once the window is over (reloaded.py)."""
    notes: list[str] = []
    totals = None
    for watch in (observer.watch, observer.acceptor_watch):
        if watch is not None:
            # the accepts end here, and the load's last look right after: stopped by SIGINT alone, bpftrace counted
            # on while it detached (~0.3 s, before END), the look came after its exit, and nginx under wrk with
            # keepalive_requests 100 read '1,386 of 1,457 connections opened and closed between two samples' in
            # one line and '1,492 connections opened and closed between two looks' in another
            watch.freeze()
    # the workers' CPU and sleeps where the window ends too, not after bpftrace's stop (0.5-1 s more, counted into
    # the sleeps per data segment the window's segments are divided into)
    used, read_at = observer.usage(), time.monotonic()
    observer.sample_load()  # what the connections carried up to the end
    observer.load.settle()  # and to the close, of those gone from that last look
    if observer.watch is not None:
        totals, counts = observer.watch.finish()
        totals = observer.own(totals)  # their own ports' accepts (probes/accept_ports.py)
        if not counts.available:
            notes.append(f"the kernel's final counts were lost ({counts.why}): the last interval is short of them")
            totals = None
        notes += ([counts.short] if counts.short else []) + observer.watched.left_out(totals)  # short: END never came
    if observer.acceptor_watch is not None and (fed := observer.acceptor_watch.finish()[1]).short:  # END never came
        notes.append(f"pid {observer.watched.acceptor}'s count of its accepts: {fed.short}")  # as watch_source reads it
    ended = observer.watch.ended if observer.watch is not None else None
    observer.tick(totals, last=True, at=read_at if ended is None else ended, usage_at=used)
    if observer.reading is not None:
        observer.mechanism = observer.reading.answer()
    watched, handoff = observer.watched, finish.handoff
    kind = recognise(watched.program, ())
    threads = (watched.threaded, len(watched.listeners), len(watched.units))
    if kind is not None and (note := kind.handed_on(*threads, handoff)):
        notes.append(note)
    began_at = boot_clock() - (time.monotonic() - observer.started)  # the window's start on the boot clock
    seen, accepted = _newcomers(observer, totals)
    over = observer.newcomers.over if observer.newcomers is not None else None
    reload = reloaded(watched, finish.netns, finish.chosen_at, began_at, seen, accepted, over)
    if reload is not None and reload.accepts and observer.newcomers and observer.newcomers.unfollowed(reload.pids):
        reload = dataclasses.replace(reload, accepts=())  # one's accepting threads were not followed: not counted
    name = observer.recognised or watched.program  # gunicorn, not python3
    if reload is not None:  # the newcomer serves the port from its start: what the one worker was given since, it
        # was given for being the only one (load.py); after_s is rounded to 0.1 s, the start read in 10 ms ticks
        since = observer.started + reload.after_s - RELOAD_SLACK_S if reload.after_s > 0 else float("-inf")
        running = frozenset(pid for pid in reload.left if not gone(pid))  # soft-stopped, not exited (reload_note)
        notes.append(reload_note(reload, name, observer.load.taken_back(since), running))
    notes += _unread(observer, accepted, name)
    # where the kernel counted the newcomers' accepts, the note above says them: they are not among the rows
    apart = "are not among the workers above: the note on them says what each accepted"
    unwatched = apart if reload is not None and reload.accepts else "are not watched"
    for index, after in sorted(observer.exited.items()):
        unit = watched.units[index]
        notes.append(
            f"worker {index} ({unit.id}) exited {after:.1f} s in; workers started after observe began (a reload's, "
            f"a replacement's) {unwatched}"
        )
    notes += observer.load.notes(watched.threaded, watched.program)
    notes += other_ports_note(observer)
    if observer.everyone_gone():
        replaced = None if reload is None else replaced_note(reload, name)
        notes.append(every_worker_exited(watched.master, replaced, counted=reload is not None and bool(reload.accepts)))
    if observer.watched.master is not None and gone(observer.watched.master):
        notes.append(f"the master (pid {observer.watched.master}) exited while it was observed")
    return dataclasses.replace(observer.result(interrupted, tuple(notes)), handoff=handoff, reloaded=reload)


def other_ports_note(observer: Observer) -> list[str]:
    """Where the workers listen on other ports than those observed (--port A of HAProxy's two frontends): the accepts
    and connections are the observed ports' alone (probes/accept_ports.py), their CPU and sleeps every port's work."""
    other = observer.other_ports
    if not other:
        return []
    ports = ", ".join(map(str, other))
    how = (
        "the kernel's count, each accept placed by the listener it was asked of"
        if observer.traced
        else "each connection placed by its local port"
    )
    return [
        f"the workers listen on port{'s' if len(other) > 1 else ''} {ports} too: the accepts and connections above "
        f"are port{'s' if len(observer.watched.ports) > 1 else ''} {', '.join(map(str, observer.watched.ports))}'s "
        f"alone ({how}), but their CPU, sleeps and context switches are the work of every port they serve"
    ]


def _newcomers(observer: Observer, totals: ThreadCounts | None) -> tuple[dict[int, float], dict[int, int] | None]:
    """The newcomers seen accepting in the window (pid -> start, boot clock), read once more from the final totals,
    and what every process accepted by the kernel's count (None: not counted)."""
    if observer.newcomers is None or totals is None:
        return {}, None
    observer.newcomers.look(totals)  # one named only by END's print
    accepted: dict[int, int] = {}
    for (pid, _), n in totals.accepted.items():
        accepted[pid] = accepted.get(pid, 0) + n
    return dict(observer.newcomers.found), accepted


def _unread(observer: Observer, accepted: dict[int, int] | None, name: str) -> list[str]:
    """The note on accepts by processes of the server's names that ended before they could be read (newcomers.py):
    counted by the kernel, but not known to be this server's, so counted to none."""
    if observer.newcomers is None or accepted is None:
        return []
    gone = {pid: n for pid in sorted(observer.newcomers.unread) if (n := accepted.get(pid, 0))}
    if not gone:
        return []
    total, each = sum(gone.values()), ", ".join(f"pid {pid} {n:,}" for pid, n in gone.items())
    return [
        f"{total:,} {'accept' if total == 1 else 'accepts'} by processes named as {name}'s that ended before they "
        f"could be read ({each}): not known to be this server's (another of its name may run here), so counted to "
        "no worker and no reload"
    ]
