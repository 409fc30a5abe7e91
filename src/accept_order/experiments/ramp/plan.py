"""What a ramp runs (experiments/ramp/run.py): its steps' offered loads, how long each runs, what a step must hold
to, and the load each step drives; and the plan as a result file keeps it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ...core.errors import PlanError
from ...core.hosts import ClientHosts
from ...core.spec import (
    MAX_CONNECTIONS,
    MAX_DRIVER_PROCS,
    ConcurrentLoad,
    Driver,
    check_concurrency,
    check_driver,
    check_range,
)


@dataclass(frozen=True)
class RampPlan:
    rates: tuple[float, ...] = ()  # open loop: connections per second, one step each
    concurrencies: tuple[int, ...] = ()  # closed loop instead: connections in flight, one step each
    step_s: float = 2.0
    in_flight: int = 1000  # open loop: most connections the load generator keeps in flight
    p99_ms: float | None = None
    p999_ms: float | None = None
    max_errors: int = 0
    driver_procs: int = 2
    timeout_s: float = 5.0
    keep_going: bool = False  # run every step, past the first that did not hold
    load_cpus: tuple[int, ...] = ()  # the load generator's processes pinned to these CPUs (--load-cpus)
    # Kept connections (ConcurrentLoad's fields): each step's load carries K requests per connection (0: each
    # kept for the whole step; the rates then count requests), and a pool opens the step's connections (its
    # --in-flight, or its concurrency) one after another at idle before the requests run over them. Every step
    # is a load of its own: its connections, a pool too, are opened at its start and closed at its end.
    requests_per_connection: int = 1
    pool: bool = False
    client_hosts: ClientHosts | None = None  # --clients: each step is split across them (loads/hosts/)
    driver: Driver = "auto"  # the load generator's loop (loads/drivers.py)

    @property
    def keeps_connections(self) -> bool:
        return self.requests_per_connection != 1 or self.pool

    def validated(self) -> RampPlan:
        if bool(self.rates) == bool(self.concurrencies):
            raise PlanError("give --rates (open loop) or --concurrency-steps (closed loop), one of them")
        for rate in self.rates:
            check_range("--rates", rate, 0.1, 10_000_000)
        for c in self.concurrencies:  # checked here, before the server starts; per driver, as the load will
            check_range("--concurrency-steps", c, 1, 1_000_000)
            check_concurrency(c, "--concurrency-steps", max(1, min(self.driver_procs, c)))
        steps = self.offered
        if any(b <= a for a, b in zip(steps, steps[1:], strict=False)):  # the knee is the last step held before
            name = "--rates" if self.rates else "--concurrency-steps"  # one that did not: read in rising order
            raise PlanError(f"{name} must rise step by step, got {','.join(f'{v:g}' for v in steps)}")
        if self.rates:
            check_concurrency(self.in_flight, "--in-flight", max(1, min(self.driver_procs, self.in_flight)))
        check_range("--requests-per-connection", self.requests_per_connection, 0, MAX_CONNECTIONS)
        check_range("--step", self.step_s, 0.1, 3600, "s")
        check_range("--driver-procs", self.driver_procs, 1, MAX_DRIVER_PROCS)
        check_driver(self.driver)
        check_range("--max-errors", self.max_errors, 0, 10**12)
        for name, bound in (("--p99", self.p99_ms), ("--p999", self.p999_ms)):
            if bound is not None:
                check_range(name, bound, 0.001, 3_600_000, "ms")
        return self

    @property
    def offered(self) -> list[float]:
        return list(self.rates) if self.rates else [float(c) for c in self.concurrencies]

    def load(self, offered: float) -> ConcurrentLoad:
        if self.rates:
            return ConcurrentLoad(
                connections=None,
                duration_s=self.step_s,
                concurrency=self.in_flight,
                driver_procs=self.driver_procs,
                timeout_s=self.timeout_s,
                rate=offered,
                cpus=self.load_cpus,
                requests_per_connection=self.requests_per_connection,
                pool=self.pool,
                clients=self.client_hosts,
                driver=self.driver,
            ).validated()
        return ConcurrentLoad(
            connections=None,
            duration_s=self.step_s,
            concurrency=int(offered),
            driver_procs=self.driver_procs,
            timeout_s=self.timeout_s,
            cpus=self.load_cpus,
            requests_per_connection=self.requests_per_connection,
            pool=self.pool,
            clients=self.client_hosts,
            driver=self.driver,
        ).validated()


def plan_dict(plan: RampPlan) -> dict[str, Any]:
    data = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(plan).items()}
    if data["requests_per_connection"] == 1:  # a ramp of one request per connection: its file as before
        del data["requests_per_connection"]
    if not data["pool"]:
        del data["pool"]
    if data["driver"] == "auto":  # as 0.2 wrote it
        del data["driver"]
    data.pop("client_hosts")  # asdict's copy: saved as the hosts say it, or not at all (a ramp driven from here)
    if plan.client_hosts is not None:
        data["client_hosts"] = plan.client_hosts.to_dict()
    return data
