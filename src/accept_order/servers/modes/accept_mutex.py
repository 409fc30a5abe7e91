"""`accept-mutex`: nginx's accept_mutex, rebuilt: only the worker holding a lock in shared memory listens.

nginx (ngx_trylock_accept_mutex, ngx_event_accept.c): before each epoll_wait a worker tries the lock without
blocking. The holder adds the listener to its epoll and waits as long as it likes; the others take the
listener out of theirs and wait at most accept_mutex_delay (500 ms) before trying again. The holder releases
the lock once it has accepted, before it serves, and tries again when it comes back. An idle server's
holder is back long before anyone's delay is up, so it keeps the lock, and with it every connection.

The lock is a POSIX record lock (lockf) on a file every worker inherits, which is what nginx uses where it
has no atomics (ngx_shmtx on a lock file): the kernel takes the lock back from a worker that dies holding
it, so a SIGKILLed holder never stops the others (nginx's master has to force-unlock its shared-memory
lock for that, ngx_shmtx_force_unlock).
"""

from __future__ import annotations

from ...core.models import Model
from .base import DEFAULT_OPTIONS, Listeners, Mode, ModeOptions, Waiter, epoll_missing

# The lock and the workers' wait (accept_mutex_lock.py) are imported where a pool of this mode opens:
# `modes` and `compare` import every mode to list them (issue 30).


class AcceptMutexMode(Mode):
    name = "accept-mutex"
    summary = "nginx's accept_mutex: only the lock holder has the shared listener in its epoll"
    why = (
        "only the worker holding the lock in shared memory has the listener in its epoll; it releases the lock "
        "after accepting and takes it back when it returns, while the others retry only every --mutex-delay "
        "(nginx's accept_mutex_delay, 500 ms): an idle holder keeps taking every connection"
    )
    model = Model.LOCK_HOLDER
    timed_waits = True  # a worker without the lock wakes when its delay is up: not a connection's wakeup

    def unavailable(self) -> str | None:
        return epoll_missing()

    def open(
        self, host: str, port: int, backlog: int, workers: int, options: ModeOptions = DEFAULT_OPTIONS
    ) -> Listeners:
        import tempfile

        from .accept_mutex_lock import MutexListeners

        base = super().open(host, port, backlog, workers, options)
        try:
            lock_file = tempfile.TemporaryFile(prefix="accept-order-mutex-")
        except OSError:
            base.close()
            raise
        return MutexListeners(base.sockets, base.port, lock_file=lock_file, delay_s=options.mutex_delay_ms / 1000)

    def waiter(self, index: int, listeners: Listeners, batch: int) -> Waiter:
        from .accept_mutex_lock import MutexListeners, MutexWaiter

        assert isinstance(listeners, MutexListeners)
        return MutexWaiter(listeners, batch)
