"""`inspect`'s result: who serves, its listeners, how each worker waits, the mechanism that follows, what
would change it, and the kernel's settings in the server's namespace. Read from /proc at one moment (a
few samples): nothing was driven at the server."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.measures import Environment

if TYPE_CHECKING:
    from ...results.schema import Shape


@dataclass(frozen=True)
class ProcessRow:
    """One process of the server. `role`: master, worker, acceptor (accepts for workers it feeds) or
    process; `holds`: the listeners in its fd table."""

    pid: int
    ppid: int
    name: str
    role: str
    threads: int
    holds: tuple[int, ...]
    call: str  # what its main thread sleeps in (a master's rt_sigsuspend, ...)
    connections_held: int | None = None  # open connections on the server's ports in its fd table; None: not read


@dataclass(frozen=True)
class ListenerView:
    family: str
    address: str
    port: int
    backlog: int | None  # None: read from /proc/net/tcp, which does not show it
    queue: int  # Recv-Q: connections waiting to be accepted now
    inode: int
    held_by: tuple[int, ...]  # pids
    waited_by: tuple[str, ...]  # worker labels ("w0", ...) that wait on it

    @property
    def where(self) -> str:
        return f"[{self.address}]:{self.port}" if ":" in self.address else f"{self.address}:{self.port}"


@dataclass(frozen=True)
class WatchView:
    fd: int
    events: int
    inode: int
    listener: bool

    @property
    def exclusive(self) -> bool:
        return bool(self.events & (1 << 28))


@dataclass(frozen=True)
class EpollView:
    """An epoll instance (pid, fd) that watches a listener or that a worker waits in; `shared_with`: the
    other (pid, fd) that are the same open file (kcmp)."""

    pid: int
    fd: int
    watches: tuple[WatchView, ...]
    shared_with: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class UnitView:
    """A thread that waits for connections (a worker: a process's, or a thread's where the server is
    threaded). `label`: w0, w1, ... in pid order; `on`: what it waits on, in words."""

    label: str
    pid: int
    tid: int
    role: str  # worker, acceptor, fed (gets connections passed), lock (waits without the listener), busy (serves one)
    call: str
    fd: int | None
    wchan: str
    on: str
    # its process's open connections on the server's ports, where it is its process's one worker (threads
    # share their process's fd table: None for them, and where it was not read)
    connections_held: int | None = None


@dataclass(frozen=True)
class MechanismView:
    """The mechanism, in the tool's vocabulary (`name`, a built-in mode) and the server kind's (`modes`:
    the kind's modes that look like it from /proc), with what it predicts and why."""

    name: str | None
    modes: tuple[str, ...]
    model: str | None
    herds: bool
    queue: str
    why: str
    evidence: tuple[str, ...]
    samples: dict[str, int]
    unseen: tuple[str, ...]  # what /proc cannot show that could change the answer
    elsewhere: tuple[str, ...] = ()  # the ports the server serves by another mechanism, one sentence each


@dataclass(frozen=True)
class ChangeView:
    """Another mode of the recognised server: the settings that take the server there from the mode seen
    (changes.py), the command that measures it. `alike`: the kind's other modes /proc shows as `mechanism`
    too, so that inspect could not confirm this one once set (empty: it could; None: a file from before
    this was recorded)."""

    mode: str
    mechanism: str
    summary: str
    settings: tuple[str, ...]
    command: str
    alike: tuple[str, ...] | None = None


@dataclass(frozen=True)
class InspectResult:
    target: str  # "pid 123" or "port 8080", as asked
    # the server kind it was recognised as, None for one this tool does not know (not "kind": the file's
    # envelope names the result's kind under that key)
    recognised: str | None
    program: str
    processes: tuple[ProcessRow, ...]
    listeners: tuple[ListenerView, ...]
    units: tuple[UnitView, ...]
    epolls: tuple[EpollView, ...]
    io_urings: int  # io_uring instances with an accept armed
    unix_links: int  # Unix socketpairs between the server's processes
    mechanism: MechanismView
    changes: tuple[ChangeView, ...]
    measure_all: str  # the one command that measures every mode of the kind here
    namespace: str  # "this tool's" or "its own (net:[INODE])"
    sysctls: dict[str, int | None]
    counters: dict[str, int]
    environment: Environment
    notes: tuple[str, ...] = field(default=())

    @property
    def workers(self) -> int:
        return len([u for u in self.units if u.role != "acceptor"])

    def to_dict(self) -> dict[str, Any]:
        """dataclasses.asdict(self), made without deep-copying each leaf: a 64-worker result has about 3,000
        values, and asdict's recursion through copy.deepcopy was most of its --json save."""
        return _plain(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InspectResult:
        """Checked whole against its shape (INSPECT_SHAPE: every nested record's too), then built."""
        from ...results.typed import build

        _shapes()
        checked = build(cls, data)
        epolls = []
        for raw in data["epolls"]:
            epoll = build(EpollView, raw)
            watches = tuple(build(WatchView, w) for w in epoll.watches)
            shared = tuple((int(p), int(f)) for p, f in epoll.shared_with)
            epolls.append(EpollView(epoll.pid, epoll.fd, watches, shared))
        return dataclasses.replace(
            checked,
            processes=tuple(build(ProcessRow, p) for p in data["processes"]),
            listeners=tuple(build(ListenerView, p) for p in data["listeners"]),
            units=tuple(build(UnitView, p) for p in data["units"]),
            epolls=tuple(epolls),
            mechanism=build(MechanismView, data["mechanism"]),
            changes=tuple(build(ChangeView, p) for p in data["changes"]),
            environment=build(Environment, data["environment"]),
        )


_ATOMS = frozenset({str, int, float, bool, type(None)})  # what asdict's deepcopy gives back as it is
_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass's field names, in asdict's order


def _plain(value: Any) -> Any:
    """What dataclasses.asdict makes of `value`: a dataclass as a dict of its fields, tuples, lists and dicts
    of the same type with their items made so, anything else deep-copied (a str or a number is itself)."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is tuple:
        return tuple([_plain(item) for item in value])
    if kind is list:
        return [_plain(item) for item in value]
    if kind is dict:
        return {_plain(key): _plain(item) for key, item in value.items()}
    names = _FIELDS.get(kind)
    if names is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _FIELDS[kind] = tuple(f.name for f in dataclasses.fields(value))
    if names is not None:
        return {name: _plain(getattr(value, name)) for name in names}
    return copy.deepcopy(value)


def _shapes() -> Shape:
    """What an inspect file holds (results/schema.py), its nested records' shapes told to the schema, made once
    where a file is read or checked: `inspect` itself saves no file unless asked, and does not load the file
    format's schema at start-up (issue 30)."""
    shape = globals().get("INSPECT_SHAPE")
    if shape is None:
        from ...results.schema import Integer, Items, ListOf, MapOf, Maybe, derive, known
        from ...results.shapes import PORT, SIGNED

        known(ListenerView, derive(ListenerView, port=PORT))
        known(EpollView, derive(EpollView, shared_with=ListOf(Items((Integer(), Integer())))))
        shape = known(
            InspectResult,
            # sysctls as read (a few are -1 by design), counters as the kernel keeps them
            derive(InspectResult, sysctls=MapOf(Maybe(SIGNED)), counters=MapOf(SIGNED)),
        )
        globals()["INSPECT_SHAPE"] = shape
    return shape


def __getattr__(name: str) -> Shape:
    if name != "INSPECT_SHAPE":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _shapes()
