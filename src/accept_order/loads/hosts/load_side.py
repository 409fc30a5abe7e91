"""The load's part on a client host, taken through remote_side.py's bootstrap (`take_part(channel)`):

    coordinator -> ("clock",)  host -> ("clock", time)     a few times: the clocks' offset
    coordinator -> ("load", pickled (address, attribution, load, protocol))
    host -> ("ready",)                                     its drivers started, waiting for the go
    coordinator -> ("go", start time on the host's clock)
    host -> ("tick", finished, served) ...                 as it drives
    host -> ("result", pickled LoadResult, started, ended) (started/ended on the host's clock)
    host -> ("error", one line)                            instead, when it cannot drive

A ("stop",) from the coordinator at any time ends the load early with what it measured (Ctrl-C there), and
the channel closing (the coordinator gone, even SIGKILLed: ssh then closes its end) ends it at once: the
drivers are stopped and reaped, and the interpreter exits. So does a coordinator that says nothing for
COORDINATOR_SILENT_S while the load runs (its beats stopped: beats.py, on a channel of their own): the network
between gone, or the coordinator's machine, leaves the channel open with nobody at the other end, and the load would
otherwise go on to its end (a --duration 1h for an hour) unfollowed; and one silent as long between the host's ready
and the go (its drivers would idle). The interpreter then exits at once: ssh would not see its end before TCP gave
up on the dead connection, a quarter of an hour later. The part says so first, in case only one way is cut; beats'
watch ends the interpreter LEAVE_S later if the part could not.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import resource
import threading
import time
from typing import Any

from ...core.errors import AcceptOrderError
from ...core.signals import deferred
from ...core.spec import FD_MARGIN, MAX_DRIVER_PROCS, ConcurrentLoad, drivers_under
from ..generator import LoadGenerator
from .beats import COORDINATOR_SILENT_S, hearing
from .beats import LATE_S as TICK_LATE_S  # (the generator ticks every TICK_S) a tick this late: this host did not run
from .remote_side import CLOSED


def take_part(channel: Any) -> None:
    message = channel.receive()
    while message[0] == "clock":
        channel.send(("clock", time.time()))
        message = channel.receive()
    if message[0] != "load":
        return
    address, attribution, load, protocol = pickle.loads(message[1])
    stopping = threading.Event()
    orphaned = threading.Event()  # the coordinator said nothing for COORDINATOR_SILENT_S
    gone = f"no word from the coordinator for {COORDINATOR_SILENT_S:g} s: it stopped its load"
    go: list[float] = []
    went = threading.Event()
    heard_at = [time.monotonic()]

    def beat() -> None:  # a beat on the watch channel (beats.py), in execnet's receiver thread
        heard_at[0] = time.monotonic()

    def heard(message: Any) -> None:  # execnet's receiver thread: a stop, the go, or the channel's end
        heard_at[0] = time.monotonic()
        if message == CLOSED or (isinstance(message, tuple) and message[0] == "stop"):
            stopping.set()
        elif isinstance(message, tuple) and message[0] == "go":
            go.append(float(message[1]))
        went.set()

    channel.setcallback(heard, endmarker=CLOSED)
    with hearing(beat):
        try:
            load = make_room(load)
            with LoadGenerator(address, attribution, load, protocol) as generator:
                heard_at[0] = time.monotonic()  # its silence counts from the ready (before: a beat is never undone)
                channel.send(("ready",))
                # Not a fixed bound: the go comes once every host is ready, a minute each at most, beats meanwhile
                while not went.is_set() and (silent := time.monotonic() - heard_at[0]) <= COORDINATOR_SILENT_S:
                    went.wait(COORDINATOR_SILENT_S - silent)
                if not went.is_set():
                    gone = (
                        f"no word from the coordinator for {COORDINATOR_SILENT_S:g} s after its ready: it never drove"
                    )
                    orphaned.set()
                if stopping.is_set():
                    return
                if orphaned.is_set():
                    raise _Orphaned  # out of the generator, which stops and reaps its idle drivers
                while (wait := go[0] - time.time()) > 0 and not stopping.wait(min(wait, 0.05)):
                    pass  # the common start, on this host's clock
                started = time.time()
                ticked = [time.monotonic()]

                def tick(done: int, elapsed: float) -> None:
                    now = time.monotonic()
                    if now - ticked[0] > TICK_LATE_S:  # never past now: a beat may have been heard since
                        heard_at[0] = min(now, heard_at[0] + now - ticked[0])
                    ticked[0] = now
                    if now - heard_at[0] > COORDINATOR_SILENT_S:
                        orphaned.set()
                    if stopping.is_set() or orphaned.is_set():
                        raise KeyboardInterrupt  # the generator stops its drivers and keeps what they measured
                    tally = generator.tally()  # the split too: the coordinator's progress says how many failed
                    channel.send(("tick", int(tally), tally.served, tally.timed_out))

                result = generator.run(tick)
                # the drivers' own window, not the time it took to collect their reports: the load ended then
                ended = started + result.wall_s
                if not orphaned.is_set():
                    with deferred():
                        channel.send(("result", pickle.dumps(result), started, ended))
            if orphaned.is_set():  # its drivers reaped as the generator closed
                _leave(channel, gone)
        except _Orphaned:  # no go came: its drivers reaped as the generator closed
            _leave(channel, gone)
        except AcceptOrderError as exc:  # the tool's own refusal: its words, about this host's share
            if not stopping.is_set():
                channel.send(("error", f"{exc} (its share: {_share(load)})"))
        except Exception as exc:  # noqa: BLE001 - said in one line on the coordinator
            if not stopping.is_set():
                channel.send(("error", f"{type(exc).__name__}: {exc}"))


class _Orphaned(Exception):
    """The coordinator fell silent before its go: the load is left before it began."""


def _leave(channel: Any, why: str) -> None:
    """The coordinator is gone: say so in case it only cannot be heard (a network that carries one way), and end
    this interpreter, whose sshd session then ends too."""
    try:
        channel.send(("error", why))
    except (OSError, EOFError, ValueError):
        pass
    os._exit(0)


def _share(load: ConcurrentLoad) -> str:
    """This host's part of the load, in the options' words (a refusal quotes the share's figures, not the run's)."""
    count = f"{load.connections} connections" if load.connections is not None else f"{load.duration_s:g} s"
    rate = f", {load.rate:g}/s" if load.rate is not None else ""
    return f"{count}, {load.concurrency} at a time{rate}, {load.driver_procs} driver processes"


def make_room(load: ConcurrentLoad) -> ConcurrentLoad:
    """Raise this host's open-file soft limit, up to its hard limit, for the share's connections (the drivers
    inherit it), as `burst` does on the coordinator (experiments/burst/run.py make_room): an ssh session often
    starts at a soft 1024 under a hard limit far above, and the coordinator's limits say nothing of this host's.
    Where one driver's part of the share would not fit under the hard limit, the share goes over as many more
    drivers as it takes (as burst spreads its drivers on the coordinator), up to MAX_DRIVER_PROCS; beyond that
    the LoadGenerator refuses it, in one line naming the host."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = load.concurrency + FD_MARGIN
    if soft == resource.RLIM_INFINITY or need <= soft:
        return load
    limit = need if hard == resource.RLIM_INFINITY else min(need, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    procs = drivers_under(load.concurrency, load.driver_procs, limit)
    if procs == load.driver_procs or procs > MAX_DRIVER_PROCS:
        return load
    return dataclasses.replace(load, driver_procs=procs)
