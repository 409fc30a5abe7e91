"""Frozen specs: what serves (ServerSpec) and what drives it (SequentialLoad; ConcurrentLoad, a closed or an
open loop, is in concurrent_load.py and handed out here on first use).

This is the one place shared values are checked (a server kind checks its own: core/kinds.py `ServerKind.check`). The
CLI's option types reject bad input first, naming the option the user typed; these checks guard the
Python API and saved files with the canonical names.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from .cpus import allowed_cpus
from .errors import PlanError

# The limits and checks live in limits.py (a leaf: concurrent_load.py checks with them); callers import them
# from here, as before.
from .limits import (  # noqa: F401
    DEFAULT_CONCURRENCY,
    DEFAULT_DRIVER_PROCS,
    DEFAULT_HOST,
    DEFAULT_MODE,
    DEFAULT_REQUESTS,
    DRIVERS,
    FD_MARGIN,
    MAX_ACCEPT_BATCH,
    MAX_BACKLOG,
    MAX_CONNECTIONS,
    MAX_DRIVER_PROCS,
    MAX_DURATION_S,
    MAX_GAP_MS,
    MAX_TIMEOUT_S,
    MAX_WORK_ITERS,
    MAX_WORK_US,
    MAX_WORKERS,
    PORT_RANGE,
    Driver,
    check_concurrency,
    check_cpus,
    check_driver,
    check_range,
    drivers_under,
    local_ports,
    ms_to_us,
    number,
    open_file_limit,
)
from .old_names import accept_old_names
from .old_names import renamed as renamed  # where callers found it before core/old_names.py
from .records import shared_methods

if TYPE_CHECKING:
    from .concurrent_load import ClosedLoopLoad as ClosedLoopLoad
    from .concurrent_load import ConcurrentLoad as ConcurrentLoad


def __getattr__(name: str) -> Any:
    """ConcurrentLoad (and ClosedLoopLoad, its old name) live in concurrent_load.py, imported on first use: a
    command that drives no concurrent load (run, show, --help) does not make its dataclass nor ClientHosts'
    (issue 30: start-up). Callers that import them from here, as before, get them from there."""
    if name in ("ConcurrentLoad", "ClosedLoopLoad"):
        from . import concurrent_load

        return getattr(concurrent_load, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The kind a spec names when it names none: this tool's own workers (servers/builtin.py takes its name from
# here, the one place it is spelled, since every spec's default is it).
DEFAULT_KIND = "builtin"
# a server known only by its address (--target): spelled here, as the default is, for the file format's readers
# below the registry (results/merge_rows.py: its rows are numbered by its replies)
REMOTE_KIND = "remote"
ATTACHED_KIND = "attached"  # a server running on this host, attached by pid (servers/attached.py)
# Kinds whose server this tool did not start: their settings are the server's own, which the tool neither chose nor
# (but for the listeners' backlogs: ServerSpec.backlogs) read. Their specs hold no backlog of the tool's and save
# none of the settings only some kinds read (the tool's defaults, which such a file claimed as the server's).
NOT_STARTED = (ATTACHED_KIND, REMOTE_KIND)
DEFAULT_BACKLOG = 511  # listen()'s backlog for a server this tool starts, unless --backlog says
UNREAD_SETTINGS = ("policy", "mutex_delay_ms", "maxconn")  # core/kind_options.py's fields: no such kind reads one
# How each kind names its servers (`ServerKind.label`), by kind name. The kinds are a floor above this one:
# servers/spec_asks.py fills this for the registry's kinds, so that a spec can say its label without importing them.
LABELS: dict[str, Callable[[ServerSpec], str]] = {}
# Each kind's own cap on accepts per wakeup (ServerKind.default_accept_batch: nginx's multi_accept off, HAProxy's
# tune.maxaccept 4), by kind name, asked of the kind when a spec of it is made without one: filled as LABELS is (the
# public names import the registry first), so that `ServerSpec(kind="nginx")` made in Python runs as `--server nginx`
# does. With the field's 0 it ran nginx multi_accept on and HAProxy with no limit, under the words of
# the command line's runs. A kind not registered yet takes 0.
OWN_ACCEPT_BATCH: dict[str, Callable[[], int]] = {}
KIND_OWN_BATCH = -1  # accept_batch's default: the kind's own (OWN_ACCEPT_BATCH, else 0), set when the spec is made
# Whether a kind gives listen() the spec's backlog (ServerKind.no_backlog is None), by kind name: filled as LABELS is.
# Caddy's and h2o's take the kernel's limit whatever the spec holds: 'burst --server caddy' said 'backlog 511' of a
# listener that netlink read at 4096. A kind not registered yet gives it.
GIVES_BACKLOG: dict[str, Callable[[], bool]] = {}


@shared_methods  # repr, == and hash as @dataclass writes them, not compiled per class (issue 30)
@dataclass(frozen=True, eq=False, repr=False)
class ServerSpec:
    """What serves: which server, how its workers accept, how much work each request costs."""

    mode: str = DEFAULT_MODE
    workers: int = 3
    host: str = DEFAULT_HOST
    port: int = 0
    work_us: int = 0  # CPU burnt per request (a timed busy loop, not a sleep)
    work_iters: int = 0  # additions per request, like the seed's Lua loop; adds to work_us
    # listen()'s backlog as this tool gives it; None for a server it did not start (NOT_STARTED): not its to give
    backlog: int | None = DEFAULT_BACKLOG
    accept_batch: int = KIND_OWN_BATCH  # most connections accepted per wakeup; 0: until EAGAIN; unset: the kind's own
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
    # An attached server's listeners' backlogs on its port as the kernel had them when the run began (inet_diag's
    # idiag_wqueue, ss -ltn's Send-Q), one per listener, sorted; empty: not read (a --target, a listener known from
    # /proc alone, a file before it was read). An attached HAProxy's 4096 was saved as the tool's default 511.
    backlogs: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind in NOT_STARTED:  # an older file's backlog was the tool's default, never the server's
            object.__setattr__(self, "backlog", None)
        if self.accept_batch == KIND_OWN_BATCH:
            own = OWN_ACCEPT_BATCH.get(self.kind)
            object.__setattr__(self, "accept_batch", own() if own is not None else 0)

    def validated(self) -> ServerSpec:
        """What every kind shares; a kind's own checks are its `check` (servers/registry.py `checked`)."""
        # policy, mutex_delay_ms and maxconn: checked by the kinds that read them (core/kinds.py KindOption)
        check_range("connections in flight", self.in_flight, 0, MAX_CONNECTIONS)
        check_range("--workers", self.workers, 1, MAX_WORKERS)
        check_range("--port", self.port, 0, 65535)
        check_range("--work-us", self.work_us, 0, MAX_WORK_US)
        check_range("--work-iters", self.work_iters, 0, MAX_WORK_ITERS)
        if self.backlog is not None or self.kind not in NOT_STARTED:  # one it starts: None is no listen() backlog
            check_range("--backlog", self.backlog, 1, MAX_BACKLOG)
        for backlog in self.backlogs:
            check_range("a listener's backlog", backlog, 0, (1 << 32) - 1)
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

    @property
    def listen_backlog(self) -> int:
        """The backlog a server this tool starts gives listen() (PlanError for one it did not start: none to give)."""
        if self.backlog is None:
            raise PlanError(f"{self.label} is a server this tool did not start: it has no backlog of the tool's")
        return self.backlog

    @property
    def known_backlogs(self) -> tuple[int, ...]:
        """The listen() backlogs known of the server: the tool's (a server it started) or those read of an attached
        server's listeners; () where neither (a --target, a listener not read, a kind that takes none: Caddy)."""
        if self.backlog is None:
            return self.backlogs
        gives = GIVES_BACKLOG.get(self.kind)
        return (self.backlog,) if gives is None or gives() else ()

    def replace(self, **changes: Any) -> ServerSpec:
        return dataclasses.replace(self, **renamed(type(self), changes)).validated()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerSpec:
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in renamed(cls, data).items() if k in known}
        for name in ("cpus", "attach", "backlogs"):
            if name in values:
                values[name] = tuple(values[name])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        # Schema version 2 stores the kind under its old name, "server": files stay readable by 0.2. A spec
        # that keeps no connection open stores no "keepalive": files of one-request connections stay as they were.
        data = {"server" if k == "kind" else k: v for k, v in dataclasses.asdict(self).items()}
        if not data["keepalive"]:
            del data["keepalive"]
        if not data["backlogs"]:
            del data["backlogs"]
        if self.kind in NOT_STARTED:  # settings nobody chose for it (the tool's defaults): not said to be its own
            for name in ("backlog", *UNREAD_SETTINGS):
                del data[name]
        return data


@shared_methods  # repr, == and hash as @dataclass writes them, not compiled per class (issue 30)
@dataclass(frozen=True, eq=False, repr=False)
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
