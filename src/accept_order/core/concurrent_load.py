"""A concurrent load's spec (ConcurrentLoad: a closed or an open loop), apart from core/spec.py so that a command
that drives no concurrent load (run, show, --help) does not make its dataclass, nor ClientHosts' (issue 30:
start-up: Python 3.11 compiles each dataclass's methods at import, ~4.5 M instructions a class). core/spec.py
hands it out on first use, so callers import it from there as before.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .errors import PlanError
from .hosts import ClientHosts  # at the top: the result files' schema reads ConcurrentLoad's hints here
from .limits import (
    DEFAULT_CONCURRENCY,
    DEFAULT_DRIVER_PROCS,
    DEFAULT_REQUESTS,
    MAX_CONNECTIONS,
    MAX_DRIVER_PROCS,
    MAX_DURATION_S,
    MAX_TIMEOUT_S,
    Driver,
    check_concurrency,
    check_cpus,
    check_driver,
    check_range,
    ran_at_once,
)


@dataclass(frozen=True)
class ConcurrentLoad:
    """Many connections at once. A closed loop: `concurrency` slots, each starting its next connection as
    soon as one ends. With a `rate`, an open loop: connections start on a fixed schedule, whatever is in
    flight (up to `concurrency`)."""

    connections: int | None = DEFAULT_REQUESTS  # None: run for duration_s instead
    duration_s: float | None = None
    # As it runs (as_ran: validated, and as a file is read), at most `connections`: each connection opens with
    # one of them (with K != 1, with its first request, a pool's too), so no more were ever open at once. '-n 20'
    # beside the default -c 200 ran 20. Not when the spec is made: dataclasses.replace(load, connections=5000)
    # of a spec made with -n 20 -c 64 would otherwise run at 20, the 64 asked for lost.
    concurrency: int = DEFAULT_CONCURRENCY
    driver_procs: int = DEFAULT_DRIVER_PROCS
    timeout_s: float = 10.0
    # Open loop instead: start this many connections per second on a fixed schedule, whatever is in flight
    # (up to `concurrency`), and time each from when it was due (wrk2's correction for coordinated omission).
    rate: float | None = None
    cpus: tuple[int, ...] = ()  # the CPUs every driver process is pinned to (--load-cpus); empty: not pinned
    # Requests over each connection before the client closes it: 1, one (connect, reply, close: the default);
    # K > 1, K requests one after another; 0, the connection lives for the whole run. With K != 1,
    # `connections` counts requests (a connection that lives for the whole run never finishes).
    requests_per_connection: int = 1
    # The pool shape: the `concurrency` connections are opened one after another at idle (each once its first
    # reply names its worker), as a proxy's pool fills, and only then do the requests run over them.
    pool: bool = False
    # --clients: the load runs on these client hosts over ssh, split across them (loads/hosts/); None: here
    clients: ClientHosts | None = None
    driver: Driver = "auto"  # the drivers' loop (DRIVERS): each host resolves "auto" for itself

    @property
    def on_client_hosts(self) -> bool:
        """Whether the load runs on client hosts (--clients), not on this host (--observe-on alone: here)."""
        return self.clients is not None and bool(self.clients.destinations)

    @property
    def keeps_connections(self) -> bool:
        """Whether the server must keep connections open for the client's requests (several per connection,
        or a pool, whose connections are opened before the requests run over them)."""
        return self.requests_per_connection != 1 or self.pool

    @property
    def kind(self) -> str:
        return "closed-loop" if self.rate is None else "open-loop"

    def as_ran(self) -> ConcurrentLoad:
        """This load at the concurrency it runs at: no more at once than its connections. Unchecked (a file's)."""
        ran = ran_at_once(self.connections, self.concurrency)
        return self if ran == self.concurrency else dataclasses.replace(self, concurrency=ran)

    def validated(self) -> ConcurrentLoad:
        # the spec every run takes (options, a plan's step, a host's or a driver's share): its header, its file
        # and the model say the concurrency that ran
        if (ran := self.as_ran()) is not self:
            return ran.validated()
        if self.connections is not None and self.duration_s is not None:
            raise PlanError("give --connections or --duration, not both")
        if self.connections is None and self.duration_s is None:
            raise PlanError("give --connections or --duration")
        if self.connections is not None:
            check_range("--connections", self.connections, 1, MAX_CONNECTIONS)
        if self.duration_s is not None:
            check_range("--duration", self.duration_s, 0.001, MAX_DURATION_S, "s")
        check_range("--driver-procs", self.driver_procs, 1, MAX_DRIVER_PROCS)
        check_range("--timeout", self.timeout_s, 0.001, MAX_TIMEOUT_S, "s")
        if self.rate is not None:
            check_range("--rate", self.rate, 0.001, 10_000_000)
        check_range("--requests-per-connection", self.requests_per_connection, 0, MAX_CONNECTIONS)
        if not isinstance(self.pool, bool):
            raise PlanError(f"pool must be true or false, got {self.pool!r}")
        if self.pool and self.requests_per_connection == 1:
            # each pooled connection would close after its first reply, the one that filled the pool: the
            # run's requests would then come over new connections, and no pool would carry them
            raise PlanError(
                "--pool keeps its connections for the requests: with --requests-per-connection 1 each would close "
                "after its first reply; give --requests-per-connection 0 (kept for the whole run) or K > 1"
            )
        for cpu in self.cpus:
            check_range("--load-cpus", cpu, 0, 1 << 20)
        check_driver(self.driver)
        if self.driver == "io_uring" and self.keeps_connections:
            raise PlanError("--driver io_uring drives one request per connection: kept connections run on epoll")
        if self.clients is not None:
            self.clients.validated()
        remote = self.on_client_hosts
        if not remote:
            check_cpus(self.cpus, "--load-cpus")  # a client host's CPUs are its own: checked there
        # As many drivers as will run: none without a slot and a connection to make.
        procs = min(self.driver_procs, max(1, self.concurrency), self.connections or self.driver_procs)
        if not remote:  # over client hosts, each host checks its own share against its own limits
            check_concurrency(self.concurrency, driver_procs=procs)
        else:
            check_range("--concurrency", self.concurrency, 1, MAX_CONNECTIONS)
        return self if procs == self.driver_procs else dataclasses.replace(self, driver_procs=procs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConcurrentLoad:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "requests" in data and "connections" not in data:  # v1 name
            values["connections"] = data["requests"]
        if "cpus" in values:
            values["cpus"] = tuple(values["cpus"])
        if values.get("clients") is not None:
            values["clients"] = ClientHosts.from_dict(values["clients"])
        return cls(**values).as_ran()  # an older file kept -c as given beside fewer connections

    def to_dict(self) -> dict[str, Any]:
        # A closed loop's and an unpinned load's files stay as 0.3 wrote them (no rate, no cpus), and a load
        # of one request per connection without a pool as before them (no requests_per_connection, no pool).
        data = dataclasses.asdict(self)
        rate, cpus = data.pop("rate"), list(data.pop("cpus"))
        per, pool = data.pop("requests_per_connection"), data.pop("pool")
        data.pop("clients")  # written below from the spec itself
        if data["driver"] == "auto":  # as 0.2 wrote them
            del data["driver"]
        return (
            {"kind": self.kind, **data}
            | ({} if rate is None else {"rate": rate})
            | ({"cpus": cpus} if cpus else {})
            | ({} if per == 1 else {"requests_per_connection": per})
            | ({"pool": True} if pool else {})
            | ({} if self.clients is None else {"clients": self.clients.to_dict()})
        )


ClosedLoopLoad = ConcurrentLoad  # its name before 0.3, for older callers of the Python API
