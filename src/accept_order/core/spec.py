"""Frozen specs: what serves (ServerSpec) and what drives it (SequentialLoad, ConcurrentLoad: a closed or an
open loop).

This is the one place shared values are checked (a server kind checks its own: core/kinds.py `ServerKind.check`). The
CLI's option types reject bad input first, naming the option the user typed; these checks guard the
Python API and saved files with the canonical names.
"""

from __future__ import annotations

import dataclasses
import math
import resource
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, get_args

from .cpus import allowed_cpus, format_cpu_list
from .errors import PlanError
from .hosts import ClientHosts  # at the top: the result files' schema reads ConcurrentLoad's hints here
from .old_names import accept_old_names
from .old_names import renamed as renamed  # where callers found it before core/old_names.py

MAX_WORKERS = 512
MAX_CONNECTIONS = 10_000_000
MAX_WORK_US = 60_000_000
MAX_WORK_ITERS = 10**10
MAX_ACCEPT_BATCH = 1 << 20
MAX_BACKLOG = 1 << 20
MAX_GAP_MS = 60_000.0
MAX_TIMEOUT_S = 3600.0
MAX_DRIVER_PROCS = 64
MAX_DURATION_S = 24 * 3600.0
DEFAULT_HOST = "127.0.0.1"
DEFAULT_MODE = "epoll"  # nginx's default on Linux: the one users most often meet
# The loop a load generator runs (loads/drivers.py): "auto" is io_uring where it can run, else epoll.
Driver = Literal["auto", "io_uring", "epoll"]
DRIVERS: tuple[Driver, ...] = get_args(Driver)
FD_MARGIN = 32  # descriptors a driver needs besides its connections (epoll, pipes, stdio, imports)


def number(value: float) -> str:
    """10000000 rather than 1e+07: limits are read by people."""
    return str(int(value)) if math.isfinite(value) and float(value).is_integer() else f"{value:g}"


def check_range(name: str, value: Any, low: float, high: float, unit: str = "") -> None:
    """PlanError naming `name` unless low <= value <= high; `unit` ("s", "ms") when the option took a
    duration the user wrote in any unit (`--step 1000h`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PlanError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or not low <= value <= high:
        u = f" {unit}" if unit else ""
        raise PlanError(f"{name} must be between {number(low)}{u} and {number(high)}{u}, got {number(value)}{u}")


def ms_to_us(ms: float, option: str = "--work-ms") -> int:
    """Milliseconds as whole microseconds; PlanError for nan or inf (which have no integer)."""
    if not math.isfinite(ms):
        raise PlanError(f"{option} must be a finite number, got {ms}")
    return int(round(ms * 1000))


PORT_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"


def drivers_under(connections: int, asked: int, limit: int) -> int:
    """Driver processes to hold `connections` at once: `asked`, or as many more as it takes for each one's
    share (and FD_MARGIN of its own files) to fit under the open-file soft limit `limit` (a burst here, a
    client host's share there)."""
    if limit == resource.RLIM_INFINITY:
        return asked
    return max(asked, math.ceil(connections / max(1, limit - FD_MARGIN)))


def open_file_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def local_ports() -> int | None:
    """How many local ports a client may use to one server address (ip_local_port_range), None if unknown."""
    try:
        with open(PORT_RANGE) as f:
            low, high = (int(v) for v in f.read().split())
        return high - low + 1
    except (OSError, ValueError):
        return None


def check_concurrency(concurrency: int, option: str = "--concurrency", driver_procs: int = 1) -> None:
    """PlanError unless `concurrency` open connections, shared by `driver_procs` processes, fit under the
    open-file limit (ulimit -n; per driver: each process has a descriptor table of its own) and the local
    port range (each open connection holds a local port to the one server address). `option`: the option
    the user gave the number with."""
    limit = open_file_limit()
    allowed = max(1, limit - FD_MARGIN) * driver_procs
    if not 1 <= concurrency <= allowed:
        per = f", times {driver_procs} driver processes" if driver_procs > 1 else ""
        raise PlanError(
            f"{option} must be between 1 and {allowed} (open-file limit {limit} minus {FD_MARGIN} "
            f"for a driver's own files{per}; raise it with ulimit -n, or give more --driver-procs), got {concurrency}"
        )
    ports = local_ports()
    if ports is not None and concurrency > ports:
        raise PlanError(
            f"{option} {concurrency}: one client address has {ports} local ports to one server address "
            f"(net.ipv4.ip_local_port_range); use at most {ports}"
        )


def check_cpus(cpus: tuple[int, ...], option: str = "--cpus") -> None:
    """Refuse CPUs this process may not run on here, before a worker (or driver) fails to pin itself to one."""
    allowed = allowed_cpus()
    foreign = sorted(set(cpus) - set(allowed))
    if foreign and allowed:
        raise PlanError(
            f"{option}: CPU {format_cpu_list(foreign)} not available here (allowed: {format_cpu_list(allowed)})"
        )


# The kind a spec names when it names none: this tool's own workers (servers/builtin.py takes its name from
# here, the one place it is spelled, since every spec's default is it).
DEFAULT_KIND = "builtin"
# How each kind names its servers (`ServerKind.label`), by kind name. The kinds are a floor above this one:
# servers/registry.py fills this as it lists them, so that a spec can say its label without importing them.
LABELS: dict[str, Callable[[ServerSpec], str]] = {}


@dataclass(frozen=True)
class ServerSpec:
    """What serves: which server, how its workers accept, how much work each request costs."""

    mode: str = DEFAULT_MODE
    workers: int = 3
    host: str = DEFAULT_HOST
    port: int = 0
    work_us: int = 0  # CPU burnt per request (a timed busy loop, not a sleep)
    work_iters: int = 0  # additions per request, like the seed's Lua loop; adds to work_us
    backlog: int = 511
    accept_batch: int = 0  # most connections accepted per wakeup; 0: until EAGAIN
    cpus: tuple[int, ...] = ()  # pin worker i to cpus[i % len(cpus)]; empty: no pinning
    kind: str = DEFAULT_KIND  # which server: builtin (this tool's workers), nginx, ... (launched), attached, remote
    attach: tuple[int, ...] = ()  # attached: the master's pid, or the workers' pids
    protocol: str = "line"  # attached: what the server speaks (line: it writes and closes; http)
    # Settings only some kinds read (each declares them: ServerKind.options, which checks them).
    policy: str = "round-robin"  # fd-pass: which worker the acceptor hands a connection to
    mutex_delay_ms: float = 500.0  # accept-mutex: how long a worker without the lock waits to retry
    maxconn: int = 0  # haproxy: connections it holds at once (maxconn); 0: its default
    # Connections the load holds open at once (set by the experiment from its load): what a launched
    # server's connection table is sized for (nginx's worker_connections); 0: one at a time.
    in_flight: int = 0
    # The load keeps each connection for several requests (ConcurrentLoad.requests_per_connection != 1, set
    # by the experiment from its load): the client sends a request per request and the server answers each
    # and keeps the connection until the client closes it. False: one answer per connection, then close.
    keepalive: bool = False

    def validated(self) -> ServerSpec:
        """What every kind shares; a kind's own checks are its `check` (servers/registry.py `checked`)."""
        # policy, mutex_delay_ms and maxconn: checked by the kinds that read them (core/kinds.py KindOption)
        check_range("connections in flight", self.in_flight, 0, MAX_CONNECTIONS)
        check_range("--workers", self.workers, 1, MAX_WORKERS)
        check_range("--port", self.port, 0, 65535)
        check_range("--work-us", self.work_us, 0, MAX_WORK_US)
        check_range("--work-iters", self.work_iters, 0, MAX_WORK_ITERS)
        check_range("--backlog", self.backlog, 1, MAX_BACKLOG)
        check_range("--accept-batch", self.accept_batch, 0, MAX_ACCEPT_BATCH)
        for cpu in self.cpus:
            check_range("--cpus", cpu, 0, 1 << 20)
        check_cpus(self.cpus)
        if self.host != DEFAULT_HOST:  # an address already (and imported here: --help checks no spec, run none else)
            import ipaddress

            try:
                ipaddress.ip_address(self.host)
            except ValueError:
                raise PlanError(
                    f"--host must be an address (resolve names with core/addresses.resolve_host), got {self.host!r}"
                ) from None
        return self

    # Renamed fields: a saved file or an older caller may still use the old name.
    RENAMED: ClassVar[dict[str, str]] = {"server": "kind"}

    @property
    def server(self) -> str:
        """The old name of `kind`, for older callers; result files keep storing the kind as "server"."""
        return self.kind

    @property
    def label(self) -> str:
        """How reports name this server: `epoll`, `nginx epoll`, `attached pid 12`, `target host:port`
        (the kind says it: core/kinds.py `ServerKind.label`, told to LABELS by servers/registry.py)."""
        labeller = LABELS.get(self.kind)  # a file from a newer version may name a kind this one does not know
        if labeller is not None:
            return labeller(self)
        # The registry not imported yet (this floor cannot import it): the default kind is named by its mode.
        return self.mode if self.kind == DEFAULT_KIND else f"{self.kind} {self.mode}"

    def replace(self, **changes: Any) -> ServerSpec:
        return dataclasses.replace(self, **renamed(type(self), changes)).validated()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerSpec:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in renamed(cls, data).items() if k in known}
        for name in ("cpus", "attach"):
            if name in values:
                values[name] = tuple(values[name])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        # Schema version 2 stores the kind under its old name, "server": files stay readable by 0.2. A spec
        # that keeps no connection open stores no "keepalive": files of one-request connections stay as they were.
        data = {"server" if k == "kind" else k: v for k, v in dataclasses.asdict(self).items()}
        if not data["keepalive"]:
            del data["keepalive"]
        return data


@dataclass(frozen=True)
class SequentialLoad:
    """nc-style connections one after the other (or paced by a gap): the ordering experiments."""

    kind: ClassVar[str] = "sequential"
    connections: int = 6
    gap_ms: float = 0.0  # start connection k at k*gap; 0: each when the previous one has finished
    timeout_s: float = 5.0
    settle: bool = True  # before each connection, wait until idle workers are really asleep
    driver: Driver = "auto"  # the client's loop (DRIVERS)

    def validated(self) -> SequentialLoad:
        check_range("--connections", self.connections, 1, MAX_CONNECTIONS)
        check_range("--gap-ms", self.gap_ms, 0, MAX_GAP_MS)
        check_range("--timeout", self.timeout_s, 0.001, MAX_TIMEOUT_S, "s")
        check_driver(self.driver)
        return self

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SequentialLoad:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        return {"kind": self.kind, **{k: v for k, v in data.items() if (k, v) != ("driver", "auto")}}  # as 0.2


def check_driver(driver: Any) -> None:
    if driver not in DRIVERS:
        raise PlanError(f"--driver must be one of {', '.join(DRIVERS)}, got {driver!r}")


DEFAULT_REQUESTS = 100_000
DEFAULT_CONCURRENCY = 200
DEFAULT_DRIVER_PROCS = 2


@dataclass(frozen=True)
class ConcurrentLoad:
    """Many connections at once. A closed loop: `concurrency` slots, each starting its next connection as
    soon as one ends. With a `rate`, an open loop: connections start on a fixed schedule, whatever is in
    flight (up to `concurrency`)."""

    connections: int | None = DEFAULT_REQUESTS  # None: run for duration_s instead
    duration_s: float | None = None
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

    def validated(self) -> ConcurrentLoad:
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
        return cls(**values)

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


accept_old_names(ServerSpec)


def sized(spec: ServerSpec, in_flight: int, keepalive: bool = False) -> ServerSpec:
    """The spec to launch for a load holding `in_flight` connections open at once (ServerSpec.in_flight),
    each for several requests when `keepalive` (ServerSpec.keepalive)."""
    return dataclasses.replace(spec, in_flight=max(spec.in_flight, in_flight), keepalive=spec.keepalive or keepalive)


def pinned(spec: ServerSpec, pin: bool) -> ServerSpec:
    """`--pin` without `--cpus`: worker i on the i-th CPU this process may use (nginx's
    worker_cpu_affinity auto)."""
    if pin and not spec.cpus:
        return dataclasses.replace(spec, cpus=tuple(allowed_cpus()))
    return spec
