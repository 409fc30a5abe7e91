"""The accept mechanisms, and the orders a mechanism can predict for who takes the next connection, each with
one name. Mechanisms: what `inspect` reads from /proc (analysis/mechanism.py), what a mode of any kind is
seen as (ModeInfo.mechanism; the built-in modes are named for theirs), what inspect and observe explain.
Orders: the modes' metadata (ModeInfo.model), the order verdict (analysis/order.py), the words for an order
seen (analysis/seen.py), the queueing model's disciplines (analysis/model_check.py) and `modes`. StrEnums,
so a name read from a result file compares equal to its member."""

from __future__ import annotations

from enum import StrEnum


class Mechanism(StrEnum):
    BLOCKING = "blocking"  # workers asleep in accept() on one socket
    EPOLL = "epoll"  # each worker's own epoll, EPOLLEXCLUSIVE on the listener
    EPOLL_HERD = "epoll-herd"  # each worker's own epoll, without EPOLLEXCLUSIVE: every one wakes
    EPOLL_SHARED = "epoll-shared"  # one epoll instance shared by the workers
    POLL = "poll"
    SELECT = "select"
    REUSEPORT = "reuseport"  # a listener per worker, SO_REUSEPORT
    ACCEPT_MUTEX = "accept-mutex"  # a lock decides which worker listens
    FD_PASS = "fd-pass"  # one acceptor hands connections to the workers
    IO_URING = "io-uring"  # a multishot accept armed in each worker's ring


class Model(StrEnum):
    FIFO = "fifo"  # rotation among the idle workers: the one idle the longest
    FIRST_REGISTERED = "first-registered"  # the lowest idle index (the first to start waiting)
    LIFO = "lifo"  # the most recent waiter
    ROUND_ROBIN = "round-robin"  # worker k mod W, chosen by an acceptor
    LOCK_HOLDER = "lock-holder"  # the worker that holds the accept lock keeps them
    # nginx with multi_accept off (1.21.6+): a worker re-adds its listener at its first accept and every 16
    # after (ngx_reorder_accept_events), which moves it to the back of the wait queue: one connection per
    # worker at start, then runs of 16 (analysis/reorder.py). Runs another mode shows name the length seen
    # ("runs-of-K", analysis/order.py): a count, so spelled from it, not a member here.
    RUNS_OF_16 = "runs-of-16"
    HASH = "hash"  # a hash of the connection's 4-tuple over the listeners (SO_REUSEPORT): a spread
    CLIENT_CPU = "cpu"  # the listener of the CPU the client connected from


# The idle orders a sequential run is fitted against, in the order a tie is broken (analysis/order.py).
# The others are not orders among idle workers: runs are seen as runs, a hash as a spread, a CPU as a CPU.
IDLE_ORDERS = (Model.FIFO, Model.FIRST_REGISTERED, Model.LIFO, Model.ROUND_ROBIN, Model.LOCK_HOLDER)
# Who keeps taking connections while others are idle: a queue that favours one worker.
FAVOURING = (Model.FIRST_REGISTERED, Model.LIFO, Model.LOCK_HOLDER, Model.RUNS_OF_16)
