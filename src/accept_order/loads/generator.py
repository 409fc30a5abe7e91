"""Load generator (closed loop, or open loop with a rate), the parent side: it owns a few driver processes
(loads/drive_loop.py).

Why processes and a raw epoll loop: one CPython process cannot open and close connections as fast as the
kernel can; a raw `select.epoll` loop does the fewest syscalls and allocations per connection, and the
work is split over processes so no single one is the bottleneck.

`LoadGenerator` owns its driver processes: leaving its `with` block ends them on every path (normal
end, exception, Ctrl-C, SIGTERM raised as an exception); drivers also die with their parent
(PR_SET_PDEATHSIG) in case the parent is killed outright. Interrupted, it asks the drivers to stop and
report what they measured, so a long run keeps its partial result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from multiprocessing.connection import Connection, wait
from typing import Any

from ..core.errors import LoadError, WorkerExited
from ..core.finished import PUBLISHED, Finished, published
from ..core.measures import SATURATED, DriverStats
from ..core.processes import FORK, READY_TIMEOUT_S, STOP_TIMEOUT_S, end_processes, out_of_resources, start_child
from ..core.protocol import LINE, ClientProtocol
from ..core.signals import deferred
from ..core.spec import ConcurrentLoad
from ..core.started import Started
from ..core.target import Attribution
from .client_warnings import STARVED, client_bound, driver_warnings
from .drive_loop import ABORT, STOP, TICK_S, DriverConfig, driver_main
from .drivers import resolve
from .load_result import LoadResult, merge
from .reply_keys import ReplyWorkers

# The module's face for Python callers, as before the result (load_result.py) and what is said of the client
# (client_warnings.py) had modules of their own
__all__ = [
    "SATURATED",
    "STARVED",
    "DriverStats",
    "client_bound",
    "LoadGenerator",
    "LoadResult",
    "driver_warnings",
    "merge",
    "run_load",
]

REPORT_TIMEOUT_S = 5.0  # after a stop request, how long drivers have to send what they measured


def split(total: int, parts: int) -> list[int]:
    """`total` as `parts` near-equal shares, larger ones first: split(10, 3) == [4, 3, 3]."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def in_proportion(total: int, weights: list[int]) -> list[int]:
    """`total` shared in proportion to `weights`, whole numbers that add up to it (largest remainders first):
    in_proportion(10, [3, 2]) == [6, 4], in_proportion(7, [2, 1]) == [5, 2]."""
    whole = sum(weights)
    exact = [total * w / whole for w in weights]
    shares = [int(x) for x in exact]
    for i in sorted(range(len(weights)), key=lambda i: shares[i] - exact[i])[: total - sum(shares)]:
        shares[i] += 1
    return shares


class LoadGenerator(Started):
    """Owner of the driver processes of one run (closed loop, or open loop with a rate). Use as a context manager."""

    def __init__(
        self, address: tuple[str, int], attribution: Attribution, load: ConcurrentLoad, protocol: ClientProtocol = LINE
    ) -> None:
        load = load.validated()
        loop = resolve(load.driver, load.keeps_connections)  # before any process starts: io_uring refused here
        procs = load.driver_procs
        slots = split(load.concurrency, procs)
        count = load.connections
        shares: list[int | None] = [None] * procs
        if count is not None:
            # An open loop's rate is shared by slots: each driver's connections in the same proportion, so
            # that every driver ends when the others do and the rate offered holds to the end.
            shares = list(split(count, procs) if load.rate is None else in_proportion(count, slots))
        self.attribution = attribution
        self.configs = [
            DriverConfig(
                i,
                address,
                attribution,
                protocol,
                shares[i],
                load.duration_s,
                slots[i],
                load.timeout_s,
                None if load.rate is None else load.rate * slots[i] / load.concurrency,
                load.cpus,
                load.requests_per_connection,
                load.pool,
                procs,
                loop,
                offset_s=0.0 if load.rate is None else i / load.rate,  # schedules interleave, as hosts' stripes
            )
            for i in range(procs)
        ]
        self.procs: list[Any] = []
        self.pipes: list[Connection] = []
        self._go = FORK.Event()
        self._stop: Any = FORK.RawValue("b", 0)
        self._progress: Any = FORK.RawArray("q", PUBLISHED * procs)  # per driver: finished, served, timed out
        self._turn: Any = FORK.RawValue("i", 0)  # a pool's fill: the driver whose turn it is to open its share

    @property
    def total(self) -> int | None:
        """Connections the run will finish (None for a duration run)."""
        shares = [c.requests for c in self.configs]
        return None if None in shares else sum(s or 0 for s in shares)

    def finished(self) -> tuple[int, int]:
        """(connections finished, of which served) so far, as the drivers last published them."""
        tally = self.tally()
        return int(tally), tally.served

    def tally(self) -> Finished:
        """Connections finished so far, with how many were served and timed out: what each tick passes on."""
        return published(self._progress)

    def start(self) -> None:
        for cfg in self.configs:
            receiver, sender = out_of_resources(f"driver {cfg.index}", lambda: FORK.Pipe(duplex=False))
            proc = FORK.Process(
                target=driver_main,
                args=(cfg, sender, self._go, self._progress, self._stop, self._turn),
                name=f"driver-{cfg.index}",
            )
            self.procs.append(proc)  # before start(): an interrupt right after it must not orphan the child
            self.pipes.append(receiver)
            out_of_resources(f"driver {cfg.index}", partial(start_child, proc))
            sender.close()
        for cfg, proc, pipe in zip(self.configs, self.procs, self.pipes, strict=True):
            ready = wait([pipe, proc.sentinel], timeout=2 * READY_TIMEOUT_S)
            if pipe in ready:
                try:
                    kind, payload = pipe.recv()
                    if kind == "ready":
                        continue
                    if kind == "error":
                        raise LoadError(f"driver {cfg.index} did not start: {payload}")
                except EOFError:
                    pass
            raise LoadError(f"driver {cfg.index} did not start (exit code {proc.exitcode})")

    def run(self, on_tick: Callable[[int, float], None] | None = None) -> LoadResult:
        """Say go, wait for every driver's tallies, merge them. `on_tick(done, elapsed_s)` runs every
        TICK_S in this process; an exception it raises (e.g. a worker died) aborts the run.

        Ctrl-C or SIGTERM (a KeyboardInterrupt) does not lose the run: the drivers are told to stop, their
        partial tallies are merged, and the result comes back with `interrupted` set to the exception,
        for the caller to re-raise once the result is saved. So does a WorkerExited from `on_tick` (a
        worker of a server this tool did not start exited: what was measured until then stands)."""
        started = time.monotonic()
        self._go.set()
        reports: dict[int, dict[str, Any]] = {}
        try:
            self._collect(reports, started, on_tick, deadline=None)
        except (KeyboardInterrupt, WorkerExited) as exc:  # a signal, or a worker of an attached server left
            self._stop.value = STOP
            # A second Ctrl-C or SIGTERM while the drivers report must not cut this short; the first
            # signal decides how the command ends (deferred() drops the second inside this handler).
            with deferred():
                self._collect(reports, started, None, deadline=time.monotonic() + REPORT_TIMEOUT_S)
            result = self._placed(merge([reports[i] for i in sorted(reports)]))
            result.interrupted = exc
            return result
        return self._placed(merge([reports[i] for i in sorted(reports)]))

    def _placed(self, result: LoadResult) -> LoadResult:
        """Counted by reply key (a server known by its replies only): placed on worker indices, once, here."""
        if not isinstance(self.attribution, ReplyWorkers):
            return result
        return result.placed(self.attribution.place(result.keys()))

    def _collect(
        self,
        reports: dict[int, dict[str, Any]],
        started: float,
        on_tick: Callable[[int, float], None] | None,
        deadline: float | None,
    ) -> None:
        pending = {i: p for i, p in enumerate(self.pipes) if i not in reports}
        while pending:
            if deadline is not None and time.monotonic() > deadline:
                return  # drivers that did not report in time: their connections are missing, said below
            sentinels = {self.procs[i].sentinel: i for i in pending}
            for ready in wait([*pending.values(), *sentinels], timeout=TICK_S):
                index = sentinels.get(ready) if isinstance(ready, int) else None
                if index is None:
                    index = next(i for i, p in pending.items() if p is ready)
                if index not in pending:
                    continue
                pipe = pending[index]
                if pipe.poll():
                    # A report read off the pipe is gone from it: a signal between the read and the store
                    # would lose what the driver sent (and the stop's collect would take the driver, which
                    # exited, for dead). Signals are held across both; one that came is raised once it is stored.
                    with deferred():
                        try:
                            kind, payload = pipe.recv()
                        except EOFError:
                            kind, payload = "eof", None
                        if kind == "result":
                            reports[index] = payload
                            del pending[index]
                    if kind == "result":
                        continue
                    if kind == "error":
                        raise LoadError(f"driver {index} failed: {payload}")
                self.procs[index].join(0.5)
                raise LoadError(
                    f"driver {index} (pid {self.procs[index].pid}) died with exit code "
                    f"{self.procs[index].exitcode} before reporting"
                )
            if on_tick:
                on_tick(self.tally(), time.monotonic() - started)

    def close(self) -> None:
        """End every driver still alive (SIGTERM, then SIGKILL) and reap it."""
        self._stop.value = ABORT  # a driver's SIGTERM handler then exits at once instead of reporting
        end_processes(self.procs, STOP_TIMEOUT_S)
        for pipe in self.pipes:
            pipe.close()
        self.pipes = []


def run_load(
    address: tuple[str, int],
    attribution: Attribution,
    load: ConcurrentLoad,
    on_tick: Callable[[int, float], None] | None = None,
    protocol: ClientProtocol = LINE,
) -> LoadResult:
    """Drive a load at `address` until its connections have finished or its duration passed."""
    with LoadGenerator(address, attribution, load, protocol) as gen:
        return gen.run(on_tick)
