"""What was measured, as plain frozen records: each connection, each worker's counters, where it ran, and
the verdict. A leaf: it imports nothing of the package but driver_stats.py (a leaf too), so anything may use
it (servers, probes, results, renderers) without an import circle. Loading these from a file goes through
results/typed.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from .records import shared_methods

if TYPE_CHECKING:
    from .driver_stats import SATURATED as SATURATED
    from .driver_stats import DriverStats as DriverStats


def __getattr__(name: str) -> Any:
    """A load's driver processes (DriverStats, SATURATED) are in driver_stats.py, imported on first use: a
    command that drives no concurrent load (run, show, --help) does not make their dataclass (issue 30:
    start-up). Callers that import them from here, as before, get them from there."""
    if name in ("DriverStats", "SATURATED"):
        from . import driver_stats

        return getattr(driver_stats, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@shared_methods  # repr, == and hash as @dataclass writes them, not compiled per class (issue 30)
@dataclass(frozen=True, eq=False, repr=False)
class ConnectionRecord:
    """One driven connection: who served it, or why it failed. Times in microseconds."""

    seq: int
    worker: int | None
    pid: int | None
    start_us: int  # offset from the start of the drive
    latency_us: int  # connect to end of reply (or to the failure)
    error: str | None = None
    client_port: int | None = None  # the client's local port: how a server's own log names the connection
    # The CPU the client ran on when it connected (sequential loads): over loopback the CPU a CPU-steered
    # listener group (reuseport-cpu, incoming-cpu) picks its listener by.
    client_cpu: int | None = None

    @property
    def served(self) -> bool:
        return self.error is None and self.worker is not None


@shared_methods  # repr, == and hash as @dataclass writes them, not compiled per class (issue 30)
@dataclass(frozen=True, eq=False, repr=False)
class WorkerCounters:
    """What one worker counted in memory and reported once at the end, plus the kernel's view of it.

    wakeups: times its wait (accept/epoll_wait/poll/select) returned; accepts: connections it accepted;
    empty: wakeups that found nothing to accept (EAGAIN); max_batch: most accepts in one wakeup.
    voluntary_switches / involuntary_switches / cpu_s: psutil deltas over the run, read by the supervisor.
    """

    index: int
    pid: int
    # None: not known (a server that does not count them itself, such as nginx)
    wakeups: int | None = 0
    accepts: int | None = 0
    empty: int | None = 0
    max_batch: int | None = 0
    voluntary_switches: int | None = None
    involuntary_switches: int | None = None
    cpu_s: float | None = None
    affinity: tuple[int, ...] = ()
    # The built-in workers' own service times (service_time.py): [bucket's lower µs, connections] pairs,
    # and their exact sum; () and None for a server that does not time them (older files, launched ones).
    service_us: tuple[tuple[int, int], ...] = ()
    service_sum_us: int | None = None
    # Kept connections (several requests each; None otherwise, where each accept is one request): the
    # requests the worker answered, and the most connections it held at once.
    requests: int | None = None
    held_peak: int | None = None

    def __post_init__(self) -> None:
        # pairs read from JSON are lists: as tuples, a counter read back equals the one written
        object.__setattr__(self, "service_us", tuple((int(v), int(n)) for v, n in self.service_us))

    def to_dict(self) -> dict[str, Any]:
        """As a result file holds it: a worker of one-request connections stores no `requests` nor
        `held_peak` (its files stay as they were)."""
        data = asdict(self)
        for name in ("requests", "held_peak"):
            if data[name] is None:
                del data[name]
        return data


@shared_methods  # repr, == and hash as @dataclass writes them, not compiled per class (issue 30)
@dataclass(frozen=True, eq=False, repr=False)
class Environment:
    """Where a result was measured: enough to tell two machines' results apart."""

    system: str
    kernel: str
    machine: str
    cpu_count: int
    somaxconn: int | None
    python: str
    hostname: str
    started_at: str


@shared_methods  # repr, == and hash as @dataclass writes them, not compiled per class (issue 30)
@dataclass(frozen=True, eq=False, repr=False)
class Verdict:
    """The pattern a run showed, how well the best model fits, and the kernel mechanism behind it."""

    pattern: str
    model: str | None
    fit: int  # informative connections the model predicted
    informative: int  # connections where more than one worker was idle
    why: str
    jain: float
    max_min: float | None  # max share / min share; None when some worker served none
    expected: bool  # the pattern is the one the mode's mechanism predicts
    # The workers' sleeps (voluntary context switches) per served connection, where a worker sleeps only
    # after a wakeup (ModeInfo.switches_are_wakeups); None elsewhere. Not wakeups: a worker that finds the
    # next connection already queued takes it without sleeping (below 1). The key keeps its old name.
    woken_per_connection: float | None = None
    # How likely the pattern is by chance: for an order, that a worker picked at random among the idle
    # ones fits as well; for a hash spread, that a uniform hash spreads them at least this unevenly.
    chance: float | None = None
    seen: str = ""  # the figures behind the pattern, in words (client CPUs, workers expected to serve none, chance)

    def line(self) -> str:
        ratio = "inf" if self.max_min is None else f"{self.max_min:.2f}"
        if not self.informative:
            fit = ""
        elif self.model:
            fit = f", {self.fit}/{self.informative} informative connections fit"
        else:
            fit = f", best idle-order model fits only {self.fit}/{self.informative}"
        sleeps = self.woken_per_connection
        slept = "" if sleeps is None else f"; sleeps (voluntary context switches) per connection {sleeps:.1f}"
        seen = f" ({self.seen})" if self.seen else ""
        return f"{self.pattern}{fit}{seen}; fairness: Jain {self.jain:.3f}, max/min share {ratio}{slept}"


Family = Literal["ipv4", "ipv6"]
Source = Literal["netlink", "proc"]


@shared_methods  # repr, == and hash as @dataclass writes them, not compiled per class (issue 30)
@dataclass(frozen=True, eq=False, repr=False)
class ListenerRow:
    """One listening TCP socket.

    ``queue`` is the current accept-queue length (ss Recv-Q): established connections nobody
    has accept()ed yet. ``backlog`` is the accept-queue limit (ss Send-Q), i.e. the listen()
    backlog after the kernel capped it at net.core.somaxconn; None when read from /proc.
    ``inode`` equals ``os.fstat(sock.fileno()).st_ino`` of the owning socket. ``source`` says
    which interface produced the row. ``v6only``: an IPv6 socket's IPV6_V6ONLY, which decides whether
    ``::`` takes IPv4 connections too (inet_diag says it; None where /proc was read, or IPv4).
    """

    family: Family
    address: str
    port: int
    queue: int
    backlog: int | None
    inode: int
    source: Source = "netlink"
    v6only: bool | None = None
