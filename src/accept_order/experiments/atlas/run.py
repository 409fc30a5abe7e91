"""Running the atlas: each installed server in each of its modes, with the same workers and the same loads.

Per server and mode, two runs on the one lifecycle: sequential connections at an idle server (the order
it hands them out in, from the records: never from the mode's name), during which `inspect` reads the
mechanism from /proc; then a closed-loop load (the share each worker got, and the tail). A row that fails
keeps what was measured before, with the reason; Ctrl-C keeps every row so far (RunInterrupted).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core import environment
from ...core.errors import AcceptOrderError, PlanError
from ...core.spec import ConcurrentLoad, Driver, SequentialLoad, ServerSpec, check_range
from ...core.target import Target
from ...core.totals import loops_ran
from ...servers.registry import launched_kinds, runnable, server_kind
from ..session import RunInterrupted
from .result import AtlasResult, AtlasRow

if TYPE_CHECKING:
    from ..latency.result import LatencyResult

# Servers people ask about that are not packaged here: their row says so, and what would change it.
NOT_PACKAGED = {
    "envoy": "not installed (not packaged in Debian 12); its listener setting connection_balance_config: "
    "exact_balance hands each accepted connection to the worker thread with the fewest",
}


@dataclass(frozen=True)
class AtlasPlan:
    servers: tuple[str, ...] = ()  # server kinds; empty: every one this version can launch
    workers: int = 3
    connections: int = 12  # sequential connections at idle, per server and mode
    load_connections: int = 3000  # the closed-loop load's connections
    concurrency: int = 20
    driver_procs: int = 2
    repeat: int = 1
    driver: Driver = "auto"  # the load generator's loop (--driver), as every command that drives it

    def validated(self) -> AtlasPlan:
        known = launched_kinds()
        for name in self.servers:
            if name not in known:
                raise PlanError(f"--server: {name!r} is not a server this version launches ({', '.join(known)})")
        check_range("--workers", self.workers, 2, 64)
        check_range("--connections", self.connections, 2, 10_000)
        check_range("--load-connections", self.load_connections, 1, 10_000_000)
        check_range("--repeat", self.repeat, 1, 100)
        self.load().validated()  # the open-file limit and the rest, before any server starts
        return self

    def load(self) -> ConcurrentLoad:
        load = ConcurrentLoad(self.load_connections, None, self.concurrency, self.driver_procs, driver=self.driver)
        return load.validated()  # as it runs (no more at once than its connections), in the plan it saves too

    def to_dict(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "connections": self.connections,
            "load": self.load().to_dict(),
            "repeat": self.repeat,
        }


def variants(plan: AtlasPlan) -> tuple[list[ServerSpec], dict[str, str]]:
    """Every (server, mode) that can run here, and why the others cannot."""
    specs: list[ServerSpec] = []
    skipped: dict[str, str] = {}
    for name in plan.servers or launched_kinds():
        kind = server_kind(name)
        missing = kind.missing()
        if missing:
            skipped[name] = f"not installed: {missing}"
            continue
        modes, unavailable = runnable(name, None)
        skipped.update({f"{name} {mode}": why for mode, why in unavailable.items()})
        batch = kind.default_accept_batch
        specs += [ServerSpec(kind=name, mode=mode, workers=plan.workers, accept_batch=batch) for mode in modes]
    if not plan.servers:
        skipped.update(NOT_PACKAGED)
    return specs, skipped


def _seen_as(target: Target) -> str | None:
    """The mechanism /proc shows for the running server, in this tool's mode names (None: not seen)."""
    from ..inspect.run import inspect

    try:
        return inspect(pid=target.pids[0], samples=3).mechanism.name
    except (AcceptOrderError, OSError, IndexError):
        return None


def measure(spec: ServerSpec, plan: AtlasPlan, round_: int) -> AtlasRow:
    from ..session import run_latency, run_sequential

    kind = server_kind(spec.kind)
    row = AtlasRow(spec.kind, spec.mode, "; ".join(s.rstrip(";") for s in kind.mode(spec.mode).settings), round_)
    seen: list[str | None] = []
    try:
        order = run_sequential(
            spec, SequentialLoad(connections=plan.connections), None, lambda t: seen.append(_seen_as(t))
        )
        v = order.verdict
        row = dataclasses.replace(
            row,
            order=v.pattern,
            order_fit=f"{v.fit}/{v.informative}",
            expected=v.expected,
            woken=v.woken_per_connection,
        )

        def under_load(loaded: LatencyResult) -> AtlasRow:
            return dataclasses.replace(
                row,
                seen_as=seen[0] if seen else None,
                served=loaded.served,
                failed=loaded.failed,
                p99_us=loaded.histogram.percentile(99) if loaded.ok else None,
                loop=loops_ran(loaded.drivers) or None,
            )

        try:
            return under_load(run_latency(spec, plan.load()))
        except RunInterrupted as stop:
            # A signal after the load had finished: the lifecycle kept the whole run, and so is its row (a
            # load cut short is not: its figures would pass for the mode's).
            whole = [r for r in stop.results if not r.interrupted]
            if not whole:
                raise
            raise RunInterrupted([under_load(whole[0])], stop.cause) from None
    except (AcceptOrderError, OSError) as exc:  # this row stops; the others still run
        return dataclasses.replace(row, seen_as=seen[0] if seen else None, error=str(exc) or type(exc).__name__)


def run_atlas(plan: AtlasPlan, on_variant: Callable[[ServerSpec, int, int], None] | None = None) -> AtlasResult:
    """Every variant, `plan.repeat` rounds, the rounds interleaved (each runs every variant once)."""
    plan = plan.validated()
    specs, skipped = variants(plan)
    if not specs:
        raise PlanError("nothing to run: " + "; ".join(f"{k} ({why})" for k, why in skipped.items()))
    env = environment.current()
    rows: list[AtlasRow] = []
    total = len(specs) * plan.repeat
    running: ServerSpec | None = None  # the variant being measured, until its row is in
    try:
        for round_ in range(1, plan.repeat + 1):
            for spec in specs:
                if on_variant:
                    on_variant(spec, len(rows) + 1, total)
                running = spec
                try:
                    rows.append(measure(spec, plan, round_))
                except RunInterrupted as last:  # a row measured whole before the signal came travels with it
                    kept = [r for r in last.results if isinstance(r, AtlasRow)]
                    rows.extend(kept)
                    running = None if kept else spec
                    raise last.cause from None
                running = None
    except KeyboardInterrupt as stop:
        if not rows:
            raise  # nothing measured: nothing to save (an earlier file of that name stays as it was)
        cut = f"{running.kind} {running.mode}" if running is not None else None
        partial = AtlasResult(tuple(rows), plan.to_dict(), env, skipped, True, cut, len(specs))
        raise RunInterrupted([partial], stop) from None
    return AtlasResult(tuple(rows), plan.to_dict(), env, skipped)
