"""How the server hands out connections, as `inspect` reads it from /proc (issue 17, section 1): which
workers hold which listener, what each waits in, with or without EPOLLEXCLUSIVE, one socket or a
SO_REUSEPORT group. observe asks as it starts watching, in a thread beside it, and keeps the answer however
the observation ends (Ctrl-C in the terminal a server runs in stops the server too); it asks again at the
end only when that found none, and never guesses: when inspect cannot tell, the mechanism is None and the
report says it is not known."""

from __future__ import annotations

from ...core.errors import AcceptOrderError, NotServing
from ...core.signal_order import start_thread
from ...servers.watched import gone
from .result import ObservedMechanism
from .server import Watched


def mechanism_of(watched: Watched) -> ObservedMechanism | None:
    """The mechanism `inspect` names for this server (the kind's own mode names too); None when it names
    none or cannot look (another user's process, or every one it tried gone meanwhile: one that ended while it was
    read is passed over for the next still there)."""
    from ..inspect.run import inspect

    alive = [pid for pid in (*watched.workers, watched.master) if pid is not None and not gone(pid)]
    for pid in alive:
        try:
            seen = inspect(pid=pid).mechanism  # a worker that is still there (one may have been replaced)
        except NotServing:
            if gone(pid):
                continue  # it ended while inspect read it (a reload's old worker): the next may still be there
            return None
        except (AcceptOrderError, OSError):
            return None
        break
    else:
        return None
    if seen.name is None:
        return None
    return ObservedMechanism(seen.name, seen.why, modes=seen.modes, unseen=seen.unseen, elsewhere=seen.elsewhere)


class Reading:
    """mechanism_of(watched), asked in a thread from the start (nothing in it handles signals: Ctrl-C is
    the main thread's); `answer()` waits for it, and asks again when it named none."""

    WAIT_S = 60.0  # reading /proc cannot hang for long; a process stuck in the kernel could

    def __init__(self, watched: Watched) -> None:
        self._watched = watched
        self._found: ObservedMechanism | None = None
        self._failed: BaseException | None = None
        self._thread = start_thread(self._read, "observe-inspect")

    def _read(self) -> None:
        try:
            self._found = mechanism_of(self._watched)
        except BaseException as exc:  # noqa: BLE001 - raised again in the main thread, by answer()
            self._failed = exc

    def ready(self) -> ObservedMechanism | None:
        """The answer if it has come (a result so far says it as soon as it is known), without waiting."""
        return None if self._thread.is_alive() else self._found

    def answer(self) -> ObservedMechanism | None:
        self._thread.join(self.WAIT_S)
        if self._failed is not None:
            raise self._failed
        if self._found is None and not self._thread.is_alive():
            self._found = mechanism_of(self._watched)  # the server may have settled since (or be gone)
        return self._found
