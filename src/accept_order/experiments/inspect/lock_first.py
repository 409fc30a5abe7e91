"""Workers known to take a lock before they wait on their listeners, where /proc shows no lock while no one
waits for it.

A lock that is free, or held by a worker busy between its wakeup and its accept, leaves no trace in /proc: no
thread sleeps in it. Under a keep-alive load every Apache prefork child with two or more Listens serves a kept
connection to its end, running, while the accept mutex sits unused; each child's APR pollset (an epoll watching
every listener without EPOLLEXCLUSIVE) then makes the running children look like the waiters of a herd (uWSGI's
default workers). What tells them apart is the kind: recognised by its process name (the registry), and its
accept-mutex mode by the layout /proc does show (single-threaded children holding several listeners)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...core.kinds import ServerKind
from ...core.models import Mechanism


@dataclass(frozen=True)
class LockFirst:
    """A process of `threads` threads holding at least `listeners` listening sockets takes a lock before it
    waits on them; `why` says so in the reading."""

    why: str
    threads: int
    listeners: int

    def applies(self, threads: int, listeners: int) -> bool:
        return threads == self.threads and listeners >= self.listeners

    def among(self, listening: frozenset[int]) -> Callable[[int, frozenset[int]], bool]:
        """Whether a process of so many threads, holding these sockets, takes the lock first: its listeners are
        counted among `listening`, every listener of its network namespace (inspect --port knows only the
        port's, and Apache's second Listen is on another)."""
        return lambda threads, sockets: self.applies(threads, len(sockets & listening))


# prefork.c's SAFE_ACCEPT: with one listener Debian's build (SINGLE_LISTEN_UNSERIALIZED_ACCEPT) takes no mutex, with
# two or more every child takes it before its pollset; `Mutex none` is refused for mpm-accept. The event MPM's
# children are threaded and take none.
APACHE_PREFORK = LockFirst(
    "Apache prefork's children take the accept mutex before they wait on two or more listeners (known of the kind: "
    "a lock no one waits for is not seen in /proc)",
    threads=1,
    listeners=2,
)
# By kind name, for the kinds whose modes include one seen as an accept mutex that /proc cannot always show
_KNOWN = {"apache": APACHE_PREFORK}


def lock_first(kind: ServerKind | None) -> LockFirst | None:
    """What the recognised kind says of a lock its workers take before they wait (None: nothing known)."""
    if kind is None or kind.name not in _KNOWN:
        return None
    # the registry still has to know the mode: a kind without an accept-mutex mode takes no such lock
    if not any(mode.mechanism == Mechanism.ACCEPT_MUTEX for mode in kind.modes().values()):
        return None
    return _KNOWN[kind.name]
