"""How the server hands out connections, as `inspect` reads it from /proc (issue 17, section 1): which
workers hold which listener, what each waits in, with or without EPOLLEXCLUSIVE, one socket or a
SO_REUSEPORT group. observe asks once, when it has finished watching, and never guesses: when inspect cannot
tell, the mechanism is None and the report says it is not known."""

from __future__ import annotations

from ...core.errors import AcceptOrderError
from ...servers.watched import gone
from .result import ObservedMechanism
from .server import Watched


def mechanism_of(watched: Watched) -> ObservedMechanism | None:
    """The mechanism `inspect` names for this server (the kind's own mode names too); None when it names
    none or cannot look (a process gone meanwhile, another user's)."""
    from ..inspect.run import inspect

    alive = [pid for pid in (*watched.workers, watched.master) if pid is not None and not gone(pid)]
    if not alive:
        return None
    try:
        seen = inspect(pid=alive[0]).mechanism  # a worker that is still there (one may have been replaced)
    except (AcceptOrderError, OSError):
        return None
    if seen.name is None:
        return None
    return ObservedMechanism(seen.name, seen.why, modes=seen.modes, unseen=seen.unseen)
