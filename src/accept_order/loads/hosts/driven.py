"""A load driven from several client hosts at once: the coordinator's side of remote_side.py.

`HostsLoad` is used as `LoadGenerator` is (session.drive_load takes either): `start()` reaches every host,
measures its clock, hands it its share and waits until its drivers are up; `run(on_tick)` gives one go at a
common absolute time, follows the hosts' progress and returns their results as one `LoadResult` whose
`hosts` keep each host's own. Ctrl-C, SIGTERM or SIGHUP (a KeyboardInterrupt here) asks every host to stop
and report, and the partial result comes back marked interrupted, as from one host. A host that stops
answering mid-run is named with what it had done, and the others' results stand. `close()` ends every
gateway, and with them every remote load.
"""

from __future__ import annotations

import dataclasses
import pickle
import queue
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...core.blocked_pool import BlockedPool
from ...core.errors import LoadError, PlanError, WorkerExited
from ...core.finished import Finished
from ...core.histogram import LatencyHistogram
from ...core.hosts import ClientHosts, HostOutcome
from ...core.processes import READY_TIMEOUT_S
from ...core.protocol import TIMEOUT, ClientProtocol
from ...core.signals import deferred
from ...core.spec import ConcurrentLoad
from ...core.started import Started
from ...core.target import Attribution
from ..drive_loop import TICK_S
from ..generator import REPORT_TIMEOUT_S
from ..load_result import LoadResult
from ..reply_keys import ReplyWorkers
from . import load_side
from .gateways import CLOSED_CHANNEL, Gateways, Host
from .remote_side import CLOSED
from .split import clock_offset, combined, shares, stripe_s

CLOCK_ROUNDS = 8  # round trips per host; the quickest sets the offset
START_MARGIN_S = 0.1  # beyond the slowest host's round trip: time for the go to reach every host
STARTED_LATE_S = 0.05  # a host that began this much after its start time is named as late
# A driving host reports every TICK_S. One that says nothing for this long is lost: its network gone (a cable, a
# switch, a power cut) or the host stalled. ssh sends no keepalive by default and the coordinator sends nothing
# while it follows, so its connection stays open without a byte for as long as the network is down: a 5 s run whose
# host lost its link at 3 s waited for it until it was interrupted (90 s later), its progress line frozen.
SILENT_S = 10.0
# How often the hosts' silences are looked at (not on every message: hundreds of hosts); the coordinator's own beats
# to them, which they need as much, are beats.py's, from the hosts' hellos to their ends
LOOK_S = 1.0


@dataclass
class _Progress:
    """One host as the run follows it."""

    host: Host
    load: ConcurrentLoad
    offset_s: float = 0.0
    uncertainty_s: float = 0.0
    start_at: float = 0.0  # on the coordinator's clock
    finished: int = 0
    served: int = 0
    timed_out: int = 0
    result: LoadResult | None = None
    started: float | None = None  # on the coordinator's clock
    ended: float | None = None
    lost: str | None = None
    heard: float = 0.0  # on the monotonic clock: when it last said anything (its start, before its first word)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.result is not None or self.lost is not None


class HostsLoad(Started):
    def __init__(
        self,
        address: tuple[str, int],
        attribution: Attribution,
        load: ConcurrentLoad,
        protocol: ClientProtocol,
        hosts: ClientHosts,
    ) -> None:
        self.load = load.validated()
        self.hosts = hosts.validated()
        self.parts = shares(self.load, len(self.hosts.destinations))  # refused here, before any host is reached
        self._given = (address, attribution, protocol)
        try:
            pickle.dumps(self._given)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise PlanError(
                f"--clients: this server's way of naming its workers cannot go to another host ({exc})"
            ) from None
        self.attribution = attribution
        self.gateways = Gateways(self.hosts)
        self.progress: list[_Progress] = []
        # The hosts that reported a load nothing stopped: kept for the run's next load (None: none kept). A host
        # lost during this load is not among them, and is then lost to the next one only if it cannot be reached
        # again, as a host lost between loads: the run's first load alone refuses to start without a host.
        self._reported: list[str] | None = None
        self._inbox: queue.Queue[tuple[int, Any]] = queue.Queue()

    @property
    def total(self) -> int | None:
        return self.load.connections

    def finished(self) -> tuple[int, int]:
        return sum(p.finished for p in self.progress), sum(p.served for p in self.progress)

    def tally(self) -> Finished:
        """Connections the hosts have finished, served and timed out, by their last reports: what a tick passes on."""
        done, served = self.finished()
        return Finished(done, served, sum(p.timed_out for p in self.progress))

    def start(self) -> None:
        connected = self.gateways.connect(load_side.__name__)
        if len(connected) < len(self.parts):  # a later load: the hosts still there drive the lost ones' share
            self.parts = shares(self.load, len(connected))
        self.progress = [_Progress(host, part) for host, part in zip(connected, self.parts, strict=True)]
        with BlockedPool(max_workers=min(32, len(self.progress))) as pool:
            failures = list(pool.map(self._clocked, self.progress))
        if any(failures):
            self._without(failures)
        address, attribution, protocol = self._given
        for p in self.progress:
            payload = pickle.dumps((address, attribution, p.load, protocol))
            p.host.send(("load", payload), "as it was given its load")
        for p in self.progress:
            reply = self._ready(p)
            if reply[0] != "ready":
                raise LoadError(f"{p.host.name}: {self._said(reply)}")

    @staticmethod
    def _ready(p: _Progress) -> Any:
        """Its word once its drivers are up, within 4 * READY_TIMEOUT_S (a minute each host, one after another: the
        hosts already ready hear beats meanwhile, beats.py's, and wait for the go)."""
        return p.host.receive(4 * READY_TIMEOUT_S, "for its drivers to start")

    def _clocked(self, p: _Progress) -> LoadError | None:
        try:
            self._clock(p)
        except LoadError as exc:
            return exc
        return None

    def _without(self, failures: list[LoadError | None]) -> None:
        """Hosts lost while their clocks were read: the run's first load stops on the first (it is not run without
        a host it was given); a later one goes on without them, as without a host it could not reach again
        (Gateways.unreached), the others driving their share."""
        if not self.gateways.later or all(failures):
            raise next(failure for failure in failures if failure is not None)
        for p, failure in zip(self.progress, failures, strict=True):
            if failure is not None:
                self.gateways.unreached[p.host.destination] = str(failure)
        kept = [p for p, failure in zip(self.progress, failures, strict=True) if failure is None]
        self.parts = shares(self.load, len(kept))
        self.progress = [dataclasses.replace(p, load=part) for p, part in zip(kept, self.parts, strict=True)]

    def _clock(self, p: _Progress) -> None:
        samples = []
        for _ in range(CLOCK_ROUNDS):
            sent = time.time()
            p.host.send(("clock",), "as its clock was read")
            reply = p.host.receive(READY_TIMEOUT_S, "for its clock")
            samples.append((sent, float(reply[1]), time.time()))
        p.offset_s, p.uncertainty_s = clock_offset(samples)

    @staticmethod
    def _said(reply: Any) -> str:
        return str(reply[1]) if isinstance(reply, tuple) and reply[0] == "error" else f"unexpected {reply!r:.80}"

    def run(self, on_tick: Callable[[int, float], None] | None = None) -> LoadResult:
        for index, p in enumerate(self.progress):
            p.host.channel.setcallback(lambda m, i=index: self._inbox.put((i, m)), endmarker=CLOSED)
        slowest = max(p.uncertainty_s for p in self.progress)
        common = time.time() + START_MARGIN_S + 4 * slowest
        for index, p in enumerate(self.progress):
            p.start_at = common + stripe_s(self.load, index)
            p.heard = time.monotonic() + (p.start_at - time.time())  # its first tick comes TICK_S after its start
            try:
                p.host.channel.send(("go", p.start_at + p.offset_s))
            except CLOSED_CHANNEL:  # gone since it said ready: the others go on without it
                p.lost = f"its connection closed before the go{p.host.last_said()}"
        try:
            self._follow(on_tick, common, deadline=None)
        except (KeyboardInterrupt, WorkerExited) as exc:
            self._tell_stop()
            with deferred():  # a second signal while the hosts report must not cut it short
                self._follow(None, common, deadline=time.monotonic() + REPORT_TIMEOUT_S + 2 * slowest + 1.0)
            result = self._result(common)
            result.interrupted = exc
            return result
        result = self._result(common)
        self._reported = [p.host.destination for p in self.progress if p.result is not None]
        return result

    def _tell_stop(self) -> None:
        for p in self.progress:
            if not p.done:
                try:
                    p.host.channel.send(("stop",))
                except CLOSED_CHANNEL:
                    p.lost = p.lost or f"its connection closed as the run was stopped{p.host.last_said()}"

    def _follow(self, on_tick: Callable[[int, float], None] | None, common: float, deadline: float | None) -> None:
        next_tick = time.monotonic() + TICK_S
        next_look = time.monotonic() + LOOK_S
        while not all(p.done for p in self.progress):
            if deadline is None and time.monotonic() > next_look:  # the stop's follow has its own deadline
                self._silences(late=time.monotonic() - next_look)
                next_look = time.monotonic() + LOOK_S
                continue
            if deadline is not None and time.monotonic() > deadline:
                for p in self.progress:
                    if not p.done:
                        p.lost = f"it did not report within {REPORT_TIMEOUT_S:g} s of the stop"
                return
            try:
                index, message = self._inbox.get(timeout=max(0.0, next_tick - time.monotonic()))
            except queue.Empty:
                next_tick = time.monotonic() + TICK_S
                if on_tick is not None:
                    on_tick(self.tally(), max(0.0, time.time() - common))
                continue
            with deferred():  # a result taken off the queue is stored before a signal can interrupt
                self._heard(self.progress[index], message)

    def _silences(self, late: float) -> None:
        """Name each host silent for SILENT_S as lost, asking it to stop: one that only stalled would otherwise drive
        on, uncounted, once it wakes (its ssh ends at close() in any case, and its load with it). A look `late` by
        more than LOOK_S is time this coordinator did not run (stopped by Ctrl-Z, its machine paused): its hosts'
        words wait unread meanwhile, so that time is not their silence. A coordinator stopped for 12 s named a host
        that had ticked all along 'silent ... the host stalled', where the host had stopped its load for want of beats
        and said so (load_side), in a message still unread."""
        now = time.monotonic()
        if late > LOOK_S:
            for p in self.progress:
                p.heard += late
        for p in self.progress:
            if not p.done and now - p.heard > SILENT_S:
                p.lost = (
                    f"it said nothing for {SILENT_S:g} s, after at least {p.finished} connections ({p.served} served "
                    "by its last report): the host stalled or the network to it is gone (its ssh connection was "
                    "still open)"
                )
                try:
                    p.host.channel.send(("stop",))
                except CLOSED_CHANNEL:
                    pass
        self._unless_all_lost()

    def _unless_all_lost(self) -> None:
        if all(q.lost is not None for q in self.progress):
            losses = "; ".join(f"{q.host.destination}: {q.lost}" for q in self.progress)
            raise LoadError(f"every client host was lost: {losses}")

    def _heard(self, p: _Progress, message: Any) -> None:
        if p.done:
            return
        p.heard = time.monotonic()
        if message == CLOSED:
            # the counts are its last progress report's (a tick): it may have done more since, never less
            p.lost = (
                f"its connection closed after at least {p.finished} connections ({p.served} served by its last "
                f"report){p.host.last_said()}"
            )
        elif message[0] == "tick":
            p.finished, p.served = int(message[1]), int(message[2])
            p.timed_out = int(message[3]) if len(message) > 3 else 0  # a host's tick before it said timeouts
        elif message[0] == "result":
            p.result = pickle.loads(message[1])
            p.started, p.ended = float(message[2]) - p.offset_s, float(message[3]) - p.offset_s
            p.finished = p.result.histogram.count + sum(p.result.errors.values())
            p.served, p.timed_out = p.result.histogram.count, p.result.errors.get(TIMEOUT, 0)
        elif message[0] == "error":
            p.lost = f"it failed: {message[1]}"
        self._unless_all_lost()

    def _result(self, common: float) -> LoadResult:
        reported = [p for p in self.progress if p.result is not None]
        for p in reported:
            p.result = _by_key(p.result) if p.result is not None else None
        starts = [p.started for p in reported if p.started is not None]
        ends = [p.ended for p in reported if p.ended is not None]
        wall = (max(ends) - min(starts)) if starts and ends else 0.0
        merged = combined([p.result for p in reported if p.result is not None], wall)
        if isinstance(self.attribution, ReplyWorkers):  # placed once, here, for every host alike
            places = self.attribution.place(merged.keys())
            merged = merged.placed(places)
            for p in reported:
                p.result = p.result.placed({k: places[k] for k in p.result.keys()}) if p.result is not None else None
        outcomes = {p.host.destination: self._outcome(p, common, self.load.rate is not None) for p in self.progress}
        for destination, why in self.gateways.unreached.items():
            outcomes[destination] = HostOutcome(
                destination, LatencyHistogram(), {}, (), 0.0, lost=f"not reached for this load: {why}"
            )
        merged.hosts = [outcomes[d] for d in self.hosts.destinations if d in outcomes]
        return merged

    @staticmethod
    def _outcome(p: _Progress, common: float, open_loop: bool) -> HostOutcome:
        r = p.result
        served = r.served if r is not None else Counter[int]()
        width = max((i for i in served if i >= 0), default=-1) + 1
        return HostOutcome(
            destination=p.host.destination,
            histogram=r.histogram if r is not None else LatencyHistogram(),
            errors=dict(r.errors) if r is not None else {},
            served=tuple(served.get(i, 0) for i in range(width)),
            wall_s=r.wall_s if r is not None else 0.0,
            drivers=tuple(r.drivers) if r is not None else (),
            offset_s=round(p.offset_s, 6),
            uncertainty_s=round(p.uncertainty_s, 6),
            started_s=None if p.started is None else round(p.started - common, 6),
            ended_s=None if p.ended is None else round(p.ended - common, 6),
            lost=p.lost,
            # an open loop's stripe, 0 included: a host lost before this load moves the next ones to other
            # stripes than their places in the list say (a closed loop's hosts are all due at the common start)
            due_s=round(p.start_at - common, 6) if open_loop else None,
            python=p.host.python,
            version=p.host.version,
            boot_id=p.host.boot_id,
        )

    def close(self) -> None:
        """A load that nothing stopped keeps the hosts that reported for the run's next load (Gateways.keep);
        any other ends them."""
        if self._reported is not None:
            self.gateways.keep(self._reported)
        else:
            self.gateways.close()


def _by_key(result: LoadResult) -> LoadResult:
    """A host's result as its drivers counted it: each host places reply keys (a server known by its replies
    only) with its own copy of the places, so the coordinator takes them back and places all hosts' keys at
    once (a worker must have one index across hosts)."""
    if result.reply_keys is None:
        return result
    return result.placed({index: key for key, index in result.reply_keys.items()})


__all__ = ["HostsLoad", "STARTED_LATE_S"]
