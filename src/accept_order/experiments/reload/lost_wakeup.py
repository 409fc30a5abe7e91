"""io_uring's lost wakeup on a killed ring: the mechanism reload names where a kill left the shared queue unserved.

Traced on Linux 6.18 (2 vCPUs; tracepoints io_uring_task_add, io_uring_complete, sock:inet_sock_set_state and the
workqueue's, as kprobes are not available here), two forked workers each with one ring and a multishot accept on
one listener, 32 closed-loop clients, worker 0 SIGKILLed under load:
- A connection that completes its handshake while worker 0 exits queues its ring's accept to the dying worker as
  task_work, which it never runs as a worker would: io_uring hands it to its fallback work, which cancels the
  request (-ECANCELED) without accepting.
- Until then, 0.7 to 3.6 ms here, each further connection queued nothing for any ring (no io_uring_task_add for
  the live ring), while 32 connections were queued (the clients whose held connections the exit had just closed,
  reconnecting at once).
- After the cancel the live ring's accept stays armed (its fdinfo: the accept, no task_work) on a queue that is
  not empty, until the next connection: one extra connection, 1.0 s after the kill, made worker 1 accept it and
  all 32 queued in each of 12 stalls (12 of 24 kills); in a 13th the clients' own reconnections after their 1 s
  timeout ended it, 1.018 s after the kill. The zombie reaped within 25 ms and the ring's teardown
  (io_ring_exit_work) done within about 100 ms ended none.
Why no ring was woken is read from the kernel's source, not traced (no kprobe could watch the wait queue): accept
waits as an exclusive waiter (IORING_OP_ACCEPT is poll_exclusive), worker 0's accept, armed first, is first among
them; the first wakeup takes the request's ownership, and each later one reaches the same entry, which returns 1
from io_poll_wake though it is already owned, so __wake_up_common stops there; the cancel removes the entry and
wakes nobody.
So the stall lasts for the rest of a run only where no connection arrives after the entry has gone: a closed loop
whose clients all wait in the queue and time out after the load's end. A timeout during the load would have
started a new connection, which wakes a live ring: there the mechanism cannot explain the others serving none."""

from __future__ import annotations

from ...render.text import duration_us
from .result import ReloadRun

# What was traced and what was read from the kernel's source are said apart: no kprobe could watch the wait queue
LOST_WAKEUP = (
    "io_uring's lost wakeup on a killed ring can do that (docs/howto/reload.md). Traced on Linux 6.18: a connection "
    "arriving while the killed worker exited queued its ring's multishot accept to the dying worker as task_work, the "
    "connections after it queued nothing for any ring, and io_uring's fallback work then cancelled the request, the "
    "queued connections unaccepted. Read from the kernel's source, not traced: that accept is still first among the "
    "listener's exclusive waiters and, already owned, ends each wakeup there (io_poll_wake returns 1), and its cancel "
    "wakes nobody, so no live ring is woken until a new connection arrives"
)


def lost_wakeup(run: ReloadRun) -> str | None:
    """The mechanism, said for a killed io-uring worker whose survivors accepted nothing (the caller's finding),
    where it can have lasted the rest of the run: a closed loop (an open one keeps starting connections) whose
    first timeout, `timeout_s` after the kill, came after the load's end, so no client started a connection after
    the killed ring's accept went. None where it cannot have."""
    load = run.load
    if run.server.mode != "io-uring" or run.how != "kill" or load.rate is not None:
        return None
    if load.duration_s is None or run.at_s is None or run.at_s + load.timeout_s < load.duration_s:
        return None
    timeout = duration_us(load.timeout_s * 1e6)
    return (
        f"{LOST_WAKEUP}; here the clients' --timeout ({timeout}) ran out only after the load's end, so no client "
        "made a new connection once those were queued"
    )
