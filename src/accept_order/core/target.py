"""The server interface: what the harness needs from anything it drives connections at.

The built-in worker pool implements it (servers/pool.py); an external server — launched from a generated
config or attached by pid — implements the same. The lifecycle (experiments/lifecycle.py) only talks to this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .protocol import ClientProtocol, parse_reply

if TYPE_CHECKING:
    from .measures import WorkerCounters


class Attribution(Protocol):
    """How a connection is attributed to a worker index. `from_reply` reads the server's answer;
    `from_socket` (for servers that do not name themselves) is asked while the connection is still open,
    with the client's view of its 4-tuple, and may find the worker that holds the accepted socket."""

    @property
    def holds_socket(self) -> bool:
        """True: the client keeps each connection open until from_socket has answered."""
        ...

    def from_reply(self, reply: bytes) -> int | None: ...

    def from_socket(self, local: tuple[str, int], peer: tuple[str, int]) -> int | None: ...


class ReplyAttribution(NamedTuple):
    """Attribution by the reply line, checked against the server's worker pids (a line naming a pid that
    is not one of this server's workers is a bad reply, not a served connection)."""

    pids: tuple[int, ...]
    holds_socket: bool = False

    def from_reply(self, reply: bytes) -> int | None:
        parsed = parse_reply(reply)
        if parsed is None:
            return None
        index, pid = parsed
        if index is None:
            return self.pids.index(pid) if pid in self.pids else None
        if 0 <= index < len(self.pids) and self.pids[index] == pid:
            return index
        return None

    def from_socket(self, local: tuple[str, int], peer: tuple[str, int]) -> int | None:
        return None


# Replies a load's loop keeps attributed: a server's few 'worker PID' lines, and any page that names none (a server
# elsewhere's, an attached one's); past this a page that differs each time (a counter, a clock) is read afresh
# each time rather than kept, one entry a request
KNOWN_AT_MOST = 4096


class KnownReplies(dict[bytes, int]):
    """Reply line -> worker index, each line attributed once: the load generator's loops look a reply up
    (`get`, a plain dict's, on their hot path) and `learn` only a line they have not seen. A server that does
    not name its worker (attached: `holds_socket`) has any answer counted as served, as worker -1; its
    per-worker counts then come from the kernel (probes/accepts.py), not from the replies."""

    def __init__(self, attribution: Attribution) -> None:
        super().__init__()
        self.attribute = attribution.from_reply
        self.unnamed = -1 if attribution.holds_socket else None

    def learn(self, reply: bytes) -> int | None:
        """The worker `reply` names (kept for the next time), or None: no reply, or a bad one."""
        who = self.attribute(reply)
        if who is None:
            who = self.unnamed if reply else None
        if who is not None and len(self) < KNOWN_AT_MOST:
            self[reply] = who
        return who


class Target(Protocol):
    """A running server, from the harness's side. Start with `start()`; `close()` ends everything it
    started on every path (it is called from `__exit__` whatever happened)."""

    @property
    def address(self) -> tuple[str, int]: ...

    @property
    def pids(self) -> Sequence[int]:
        """Worker pids in index order (the order they started waiting)."""
        ...

    @property
    def attribution(self) -> Attribution: ...

    @property
    def protocol(self) -> ClientProtocol:
        """What a client sends and how the reply names the worker (core/protocol.py)."""
        ...

    @property
    def unsettled(self) -> int:
        """Connections started before every idle worker was back asleep."""
        ...

    def start(self) -> None: ...

    def settle(self) -> None:
        """Before a sequential connection: wait until every idle worker is asleep in its wait call."""
        ...

    def check_alive(self) -> None:
        """Raise WorkerError naming a worker that died."""
        ...

    def death_fds(self) -> list[int]:
        """Descriptors that become readable when a worker dies (pidfds), for a client's poll set."""
        ...

    def stop(self) -> list[WorkerCounters]:
        """Read the kernel's usage deltas, stop the workers, return what each counted."""
        ...

    def check_stopped(self) -> None:
        """After stop(): raise WorkerError for a worker that had died before it was told to stop."""
        ...

    def own_evidence(self) -> dict[str, Any]:
        """After stop(): what the server adds to the run's evidence itself, by key: a mode's own process
        ("acceptor", fd-pass's), the server's own account of who served what ("witness"); {} for none."""
        ...

    def close(self) -> None: ...


class Serving(Target, Protocol):
    """What `serve` needs beyond a Target (the built-in pool and every launched server have it)."""

    def wait_for_death(self) -> None:
        """Block until a worker (or a launched server's master) dies, then raise WorkerError naming it."""
        ...

    def sequence(self) -> list[int]:
        """After stop: the worker of each connection, by accept time (built-in) or in the server's log."""
        ...
