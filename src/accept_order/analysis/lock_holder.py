"""The `holder` discipline of analysis/queueing.py: an accept lock's holder takes the connections, the others the lock
only when they try it while it is free (nginx's accept_mutex, and this tool's accept-mutex mode, which rebuilds it).

nginx 1.22, ngx_process_events_and_timers (ngx_event.c): each turn of a worker's loop tries the lock first
(ngx_trylock_accept_mutex). The worker that gets it keeps the listener in its epoll and holds the lock through its
epoll_wait and its accepts, then unlocks (ngx_shmtx_unlock) and only then serves what the wait returned (the posted
events). A worker that finds the lock taken takes the listener out of its epoll and waits at most accept_mutex_delay
(500 ms) before its next turn, or less where an event of its own connections wakes it. So the lock is free exactly
while its holder serves: a worker that tries then takes it, whether or not a connection waits, and the old holder,
back from serving, finds it taken (the new holder waits in epoll, holding it) and sleeps for the delay.

Here, so: a worker's turn comes when it finishes serving and, for one without the lock, when its delay is up. It takes
the lock if it holds it already or the holder is serving; else it sleeps `delay`. The holder, idle, takes an arrival at
once; one that comes while it serves waits in the one queue. A connection taken is held for a while before it is
served, the lock with it: the holder's accept and its wait in epoll for the request the client sends after the
handshake (read in the next turn of the loop). Each hold is drawn at random, mean `hold` (its length is the client's
and the machine's: a client waiting for a CPU takes longer), so two workers' turns drift against each other; one that
comes back inside the other's hold drops out until its delay is up. With no hold two busy workers always find the lock
free, and take turns for ever.

Per-worker accepts counted in the kernel (bpftrace on sys_exit_accept4) of Debian's nginx 1.22 (accept-order's own,
--mode accept-mutex: accept_mutex on, multi_accept off), 2 workers, 3,000 connections, load 5, Linux 6.18, 2 vCPUs;
measured, then the model's split of the run's own connections (median of 5 seeds) and its p50/p99 (ms), before -> now:
  1 ms of work, 1 client:  1,253/1,747, p50 1.17 p99 8.19;  3,000/0 -> 1,593 top, p50 1.52 -> 1.56, p99 1.52 -> 1.75
               2 clients:  1,669/1,331, p50 2.15 p99 7.55;  1,652 -> 1,941 top, p50 2.43 -> 2.49, p99 2.43 -> 2.74
               4 clients:  1,511/1,489, p50 4.54 p99 27.5;  1,528 -> 1,714 top, p50 4.31 -> 4.52, p99 4.31 -> 9.07
               8 clients:  1,751/1,249, p50 10.3 p99 35.3;  1,526 -> 1,566 top, p50 9.18 -> 9.46, p99 9.18 -> 19.1
  no work, 1 client:       3,000/0,     p50 0.13 p99 0.26;  3,000 -> 3,000,     p50 0.07 -> 0.11, p99 0.07 -> 0.30
           2 clients:      3,000/0,     p50 0.17 p99 2.57;  2,333 -> 3,000,     p50 0.20 -> 0.29, p99 0.20 -> 0.53
           4 clients:      3,000/0,     p50 0.20 p99 3.00;  2,325 -> 2,999,     p50 0.14 -> 0.47, p99 0.14 -> 0.79
           8 clients:      3,000/0,     p50 0.64 p99 2.66;  2,281 -> 2,484,     p50 0.30 -> 0.99, p99 0.30 -> 1.42
With work the lock moves at about every delay, even at 1 client, whose connections never wait (the model before
handed it on only for a waiting connection: 3,000/0); with none each run took 0.27-0.44 s, under the delay, so the
other worker tried the lock once at most. The p99s measured are the machine's as much as the queue's (others used half
its CPUs); without work the hold is too long (50 µs on 72 µs of service: p50 0.47 against 0.20 at 4 clients).

ngx_accept_disabled (a worker with more than 7/8 of worker_connections open skips its turns at the lock) is left
out: it takes hundreds of connections open in one worker (672 of Debian's 768), beyond a closed loop's clients.
`batch`: as queueing.py's (multi_accept on: the holder accepts the whole queue, which stays its own)."""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

ARRIVE, SERVE, DONE, WAKE = 0, 1, 2, 3  # the events, in this order where they coincide

# The holder's mean hold on each connection it takes (µs, the latency model's unit): its accept and one more turn of
# its loop, the lock held, to read the request. Chosen, not measured: of 20, 50, 100 and 200 µs, the one whose p50s are
# nearest the runs above with work (at 20 the 2-client run reads as both serving at once, p50 1.26 ms; at 100 the 4-
# and 8-client ones as twice the queue, 8.89 and 19.0 ms)
HOLD_US = 50.0


class Arriving(Protocol):
    """queueing.Arrivals, as read here (queueing.py imports this module: not the other way round)."""

    @property
    def loop(self) -> str: ...
    @property
    def concurrency(self) -> int: ...
    @property
    def rate(self) -> float: ...
    @property
    def start(self) -> float: ...


def simulate_holder(
    workers: int,
    arrivals: Arriving,
    draws: Sequence[Callable[[], float]],
    requests: int,
    batch: int,
    rng: random.Random,
    warmup: float,
    delay: float,
    hold: float = 0.0,
) -> tuple[list[float], list[int]]:
    """The `holder` discipline's run (queueing.simulate's arguments, each worker's service a draw; `delay`: the retry
    delay, `hold`: the lock held on each connection taken, both in the service's unit): the measured sojourns, sorted,
    and the requests each worker started."""
    more = batch - 1 if batch > 0 else requests  # queued connections the holder takes beside the one it serves
    events: list[tuple[float, int, int, float]] = []  # (time, event, worker, arrival time)
    busy, holding, served = [False] * workers, [False] * workers, [0] * workers
    own: list[deque[float]] = [deque() for _ in range(workers)]
    shared: deque[float] = deque()
    holder = 0
    wake_at = [rng.uniform(0, delay) if w else -1.0 for w in range(workers)]  # the others' delays, as found
    for w in range(1, workers):
        heapq.heappush(events, (wake_at[w], WAKE, w, 0.0))
    warm_at = max(1, int(requests * warmup)) if warmup > 0 else 0
    issued, out = 0, list[float]()
    closed = arrivals.loop == "closed"

    def arrive(now: float) -> None:
        nonlocal issued
        if issued < requests:
            heapq.heappush(events, (now, ARRIVE, -1, now if issued >= warm_at else -1.0 - now))
            issued += 1

    def start(w: int, now: float, req: float, accepted: bool) -> None:
        """w starts on a request: one it accepted now is held first (the lock with it), one of its own is served."""
        busy[w], holding[w], wake_at[w] = True, accepted and hold > 0, -1.0
        served[w] += 1
        if holding[w]:
            heapq.heappush(events, (now + rng.expovariate(1 / hold), SERVE, w, req))
        else:
            heapq.heappush(events, (now + draws[w](), DONE, w, req))

    def turn(w: int, now: float) -> None:
        """w at the top of its loop, serving nothing: its try at the lock, free while the holder serves."""
        nonlocal holder
        if w != holder and busy[holder] and not holding[holder]:
            holder = w  # it adds the listener to its epoll; the old holder finds the lock taken when it is back
        busy[w] = False
        if w == holder:
            if shared:
                first = shared.popleft()
                while shared and len(own[w]) < more:
                    own[w].append(shared.popleft())
                start(w, now, first, True)
        elif issued < requests or shared:  # the lock taken: sleep for the delay, then try again
            wake_at[w] = now + delay
            heapq.heappush(events, (wake_at[w], WAKE, w, 0.0))

    if closed:
        spread = arrivals.start / max(1, arrivals.concurrency - 1) if arrivals.concurrency > 1 else 0.0
        for k in range(min(arrivals.concurrency, requests)):
            arrive(k * spread)
    else:
        arrive(rng.expovariate(arrivals.rate) if arrivals.loop == "poisson" else 0.0)
    while events:
        now, kind, w, req = heapq.heappop(events)
        if kind == ARRIVE:
            if not busy[holder]:  # it waits in epoll holding the lock: it accepts at once
                start(holder, now, req, True)
            else:
                shared.append(req)
            if not closed:
                arrive(now + (rng.expovariate(arrivals.rate) if arrivals.loop == "poisson" else 1 / arrivals.rate))
        elif kind == SERVE:  # the lock let go: the request is served
            holding[w] = False
            heapq.heappush(events, (now + draws[w](), DONE, w, req))
        elif kind == DONE:
            if req >= 0:
                out.append(now - req)
            if own[w]:
                start(w, now, own[w].popleft(), False)
            else:
                turn(w, now)
            if closed:
                arrive(now)
        elif not busy[w] and wake_at[w] == now:  # a sleeper's delay is up (not one it left since)
            turn(w, now)
    out.sort()
    return out, served
