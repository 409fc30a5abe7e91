"""The sequential client: nc-style connections (connect, read the reply, close), one after another or paced.

With gap 0 each connection starts when the previous one has finished, like `for i in $(seq 6); do nc
...; done`. With a gap, connection k starts k*gap after the first whether or not the earlier ones have
finished (loads/sequential_paced.py). Every connection ends as a record: served (by the worker its target
attributes it to) or failed.

The one-at-a-time loop is the harness's hot path (benchmarks/bench_run.py holds it to a C client doing
the same), so it is straight-line code around one socket: made nonblocking at creation, with SO_RCVLOWAT
so that the reply alone does not wake it (the FIN does), connected, then watched with poll() for reading
and the peer's FIN; the wakeup that reports the FIN takes the reply with one recv. The usual connection
costs socket, setsockopt, connect, getsockname, poll, recv, close, and one wakeup; without settling, the
next connection connects before the previous one is closed and recorded. The workers' pidfds
(gathered in one epoll descriptor) are looked at every 10 ms, not in each poll: staying alive costs
nothing per connection; once a connection has failed they join the poll set, so that the death behind
it wakes the loop.
"""

from __future__ import annotations

import errno
import math
import os
import select
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from ..core.cpus import current_cpu
from ..core.errors import PlanError
from ..core.measures import ConnectionRecord
from ..core.processes import MAX_REPLY
from ..core.spec import Driver, SequentialLoad
from ..core.target import Target
from .sequential_books import (
    NONBLOCK_FLAG,
    POLLRDHUP,
    READABLE,
    SO_RCVLOWAT,
    SOCK_STREAM_NONBLOCK,
    Books,
    RawSocket,
    death_watch,
    failure,
    take,
)
from .sequential_paced import drive_paced

if TYPE_CHECKING:
    from ..probes.accept_log import AcceptLog

# How often the one-at-a-time loop looks for a dead worker (and the longest it sleeps without looking):
# outside its poll set, staying alive costs nothing per connection (a descriptor more in each poll cost
# about 5 CPU-us per connection, measured here).
DEATH_CHECK_MS = 10


def loop_for(requested: Driver) -> Literal["epoll"]:
    """The loop the sequential client runs for --driver `requested`: its readiness loop ("epoll" in --driver's
    words; poll(2) for one socket) for auto and epoll. io_uring is refused: one connection at a time leaves it
    nothing to batch, and it measured slower here (benchmarks/README.md: 100-123 CPU-us per connection
    against 100-107 for this loop on a busy 2-vCPU KVM, in the same rounds), so auto is not io_uring either."""
    if requested == "io_uring":
        raise PlanError(
            "--driver io_uring: the sequential client has no io_uring loop (one connection at a time gives "
            "it nothing to batch, and it measured slower); use --driver auto or epoll"
        )
    return "epoll"


def _checked(target: Target) -> Callable[[], None]:
    def check_then_settle() -> None:
        target.check_alive()
        target.settle()

    return check_then_settle


def run_sequential(
    target: Target,
    load: SequentialLoad,
    on_record: Callable[[ConnectionRecord], None] | None = None,
    accepts: AcceptLog | None = None,
) -> list[ConnectionRecord]:
    """Drive `load.connections` connections at `target`; one record per connection, in start order.

    A worker's death raises WorkerError (from target.check_alive) as soon as its pidfd wakes the loop;
    the connections in flight then end as aborted records, passed to `on_record` like the others.
    With `accepts`, a reply that names no worker is attributed to the worker the kernel saw accept the
    connection (instead of to the holder of its socket, which a server that has closed no longer is).
    """
    loop_for(load.driver)  # before any connection: io_uring is refused
    books = Books(target, on_record, accepts)
    death_fds = set(target.death_fds())
    watch = death_watch(sorted(death_fds))
    if watch is not None:
        death_fds = {watch.fileno()}
    # Without pidfds (not Linux), ask before each connection instead: a waitpid per connection.
    before_each: Callable[[], None] | None = None
    if load.settle:
        before_each = target.settle if death_fds else _checked(target)
    elif not death_fds:
        before_each = target.check_alive
    try:
        if load.gap_ms > 0:
            drive_paced(target, load, books, death_fds, before_each)
        else:
            _one_at_a_time(target, load, books, death_fds, before_each)
    finally:
        if watch is not None:
            watch.close()
    return books.in_order()


def _one_at_a_time(
    target: Target,
    load: SequentialLoad,
    books: Books,
    death_fds: set[int],
    before_each: Callable[[], None] | None,
) -> None:
    """Each connection when the previous one has finished.

    The next connection's socket is made while the previous one is in flight. Without settling (no
    `before_each`), a connection has finished when its reply has ended: the next one connects then, and
    the previous one is closed and recorded while a worker takes the next. With it, or where the server
    holds each connection until it is attributed, the previous one is closed first: a server may still
    act on the client's close (nginx's lingering close reads until it comes), and settling promises that
    the workers are idle and asleep when the next connection arrives.

    The workers' death watch (`death_fds`) stays out of the connections' poll set while they all succeed:
    it is looked at every DEATH_CHECK_MS (waits are cut into slices that long), so a death is noticed
    within one. After a failed connection, which may be a worker's death not yet visible, it joins the
    poll set for the rest of the drive: the death then wakes the loop. The connection in flight when the
    drive stops (a worker died, Ctrl-C) ends as an aborted record, or a served one where its whole reply was
    read (Books.cut)."""
    address, timeout_s, count = target.address, load.timeout_s, load.connections
    request = target.protocol.request
    holds_socket, whole = books.holds_socket, books.whole
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    poller = select.poll()
    register, unregister, poll, modify = poller.register, poller.unregister, poller.poll, poller.modify
    deaths = select.poll()
    for death_fd in death_fds:
        deaths.register(death_fd, select.POLLIN)
    died = deaths.poll if death_fds else None  # None: watched in the poll set, or not at all
    # The C-level socket: the socket module's subclass adds a Python __init__ and close (2 us a connection).
    new_socket = RawSocket
    lowat = SO_RCVLOWAT if not holds_socket else None
    clock, getcpu = books.clock, current_cpu
    # The usual end, looked up without a call: a reply seen before, from a worker that is not holding it.
    known = books.replies.get if not holds_socket and books.body is None else None
    timeout_ns = int(timeout_s * 1e9)
    slice_ns = DEATH_CHECK_MS * 1_000_000
    timed_out = f"timeout: no answer within {timeout_s:g} s"
    watching = READABLE | select.POLLOUT if request else READABLE
    broken = select.POLLERR | select.POLLHUP
    in_turn = holds_socket or before_each is not None  # each closed before the next connects
    with_fin = READABLE if POLLRDHUP else -1  # without POLLRDHUP (not Linux) a wakeup never says FIN

    def opened() -> RawSocket | OSError:
        """A socket for the next connection, or why there is none (EMFILE: out of descriptors)."""
        try:
            sock = new_socket(family, SOCK_STREAM_NONBLOCK)
        except OSError as exc:
            return exc
        try:
            if not NONBLOCK_FLAG:
                sock.setblocking(False)
            if lowat is not None:
                sock.setsockopt(socket.SOL_SOCKET, lowat, MAX_REPLY)
        except OSError as exc:
            sock.close()
            return exc
        return sock

    def finish(
        seq: int,
        sock: RawSocket,
        started: int,
        ended: int,
        data: bytes,
        error: str | None,
        port: int | None,
        cpu: int | None,
    ) -> None:
        """Close and record a connection that has ended; after a failure, watch the workers in each poll."""
        nonlocal died
        worker = known(data) if known is not None and error is None else None
        if worker is not None:
            sock.close()
            books.record(seq, worker, started, ended, None, port, cpu)
            return
        books.close(seq, sock, started, ended, data, error, port, cpu)
        if died is not None and books.records[seq].error is not None:
            for death_fd in death_fds:
                register(death_fd, select.POLLIN)
            died = None

    ended: tuple[Any, ...] | None = None  # the previous connection, recorded once this one is on its way

    def finish_previous() -> None:
        """Record the connection left pending, if any, once (even if recording it raises)."""
        nonlocal ended
        if ended is not None:
            previous = ended
            try:  # `ended` cleared inside: a signal before that leaves it for the caller's finish_previous
                ended = None
                finish(*previous)
            except BaseException:  # a signal while it was recorded: it still ends as a record, served if it was
                seq, sock, started, ended_ns, data, error, port, cpu = previous
                books.cut(seq, sock, started, data, error, port, cpu, ended_ns)
                raise

    ahead: RawSocket | OSError | None = opened()
    next_check = clock() + slice_ns
    try:
        for seq in range(count):
            if before_each:
                before_each()
            sock = ahead
            ahead = None
            if sock is None or isinstance(sock, OSError):  # the socket could not be made
                finish_previous()
                books.unopened(seq, sock if sock is not None else OSError("no socket"))
                ahead = opened() if seq + 1 < count else None
                continue
            started = clock()
            data, unsent, error, port, cpu = b"", request, None, None, None
            dead = False  # a worker's death woke this wait
            try:
                code = sock.connect_ex(address)
                if getcpu is not None:
                    cpu = getcpu()  # the CPU the connect ran on
                finish_previous()  # the previous connection's end, while a worker takes this one
                if seq + 1 < count:
                    ahead = opened()
                if code and code != errno.EINPROGRESS:
                    error = failure(OSError(code, os.strerror(code)))
                else:
                    port = sock.getsockname()[1]  # bound by connect: how the server's own log names it
                    fd = sock.fileno()
                    register(fd, watching)
                    done = False
                    while not done:
                        now = clock()
                        left = started + timeout_ns - now
                        if left <= 0:
                            error = timed_out
                            break
                        if died is not None and now >= next_check:
                            next_check = now + slice_ns
                            # a worker exited: what its reply left in the socket is taken before that is said (a
                            # worker that answers, closes and exits has served this one; the stop lost it)
                            gone = bool(died(0))
                        else:
                            gone = False
                        wait_ms = 0 if gone else DEATH_CHECK_MS if left > slice_ns else math.ceil(left / 1e6)
                        for ready, events in poll(wait_ms):
                            if ready != fd:
                                dead = True
                            elif events == with_fin:  # the reply and the FIN, nothing else: one recv takes both
                                data += sock.recv(MAX_REPLY)  # after what an earlier wakeup took, if any
                                done = len(data) < MAX_REPLY
                                if not done:  # a reply as long as the buffer: read on, as after data alone
                                    data, done, error = take(sock, data, 0, holds_socket, whole)
                            elif unsent and events & select.POLLOUT and not events & broken:
                                try:
                                    unsent = unsent[sock.send(unsent) :]
                                except OSError as exc:
                                    error, done = failure(exc), True
                                else:
                                    if not unsent:
                                        modify(fd, READABLE)
                            else:
                                data, done, error = take(sock, data, events, holds_socket, whole)
                        if gone and done:
                            dead = True  # recorded below as served, then the exit is said
                        elif gone or dead and not done:
                            target.check_alive()  # raises WorkerError naming the worker that exited
                    unregister(fd)
                # Still inside the try: a signal as clock() returns must not find it neither in flight nor
                # pending (it would leave no record).
                ended = (seq, sock, started, clock(), data, error, port, cpu)
            except BaseException:
                try:
                    finish_previous()  # this one too, once it was pending: with what it got
                finally:  # recorded just above, else served if its whole reply was read, else aborted
                    books.cut(seq, sock, started, data, error, port, cpu)
                raise
            if in_turn or dead or error is not None:
                # Now, not after the next connect (see the docstring); a worker that answered, then exited,
                # has served; a failure may be a death to look for at once.
                finish_previous()
                next_check = 0 if error is not None else next_check
            if dead:
                target.check_alive()
            if died is not None and clock() >= next_check:
                next_check = clock() + slice_ns
                if died(0):
                    finish_previous()
                    target.check_alive()
    finally:
        try:
            finish_previous()  # served before the drive stopped (before_each raised, or the drive ended)
        finally:
            if ahead is not None and not isinstance(ahead, OSError):  # made for a connection not reached
                ahead.close()
