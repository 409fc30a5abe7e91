"""A review of 118f8b9 (a thread of the waiter's own process is no lock loser): right for a second loop in an
epoll without the listener (Node's primary), wrong for threads waiting for the lock itself. uWSGI with one
process of 4 threads and --thunder-lock (uwsgi --processes 1 --threads 4 --thunder-lock, checked by hand):
one thread in epoll_wait on the listener, three in FUTEX_LOCK_PI. Version 0.2 read 'accept-mutex (uwsgi's
thunder-lock)'; 118f8b9 read 'epoll: 1 worker ... with one waiter there is no one else to wake', and 'Why: only
one worker waits for connections: it takes every one', though the four threads take turns at the lock."""

from __future__ import annotations

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener, Seen

LISTENER = Listener(inode=41, address="127.0.0.1", port=18120)
WORKER, MASTER = 200, 100


def test_threads_of_the_waiters_process_waiting_for_the_lock_are_its_losers() -> None:
    holder = Seen(pid=WORKER, tid=WORKER + 1, call="epoll_wait", via="epoll", listeners=frozenset({41}),
                  exclusive=False, epoll_id="200:8", holds=frozenset({41}))  # fmt: skip
    waiting = [Seen(pid=WORKER, tid=WORKER + i, call="futex", via="lock", holds=frozenset({41})) for i in (2, 3, 4)]
    verdict = classify([holder, *waiting], [LISTENER], {WORKER: MASTER}, {})
    assert verdict.mechanism == "accept-mutex", verdict
    assert verdict.losers == tuple(s.unit for s in waiting), verdict
    assert verdict.evidence[0].startswith("only 1 of 4 workers has the listener"), verdict


def _lone(via: str, call: str, exclusive: bool | None = None) -> str:
    seen = Seen(pid=WORKER, tid=WORKER, call=call, via=via, listeners=frozenset({41}), exclusive=exclusive,
                epoll_id="200:8" if via == "epoll" else None, holds=frozenset({41}))  # fmt: skip
    return classify([seen], [LISTENER], {WORKER: MASTER}, {}).evidence[0]


def test_one_waiter_under_load_is_said_in_the_singular() -> None:
    """gunicorn's sync workers under wrk -c6, two of three busy at the look: '1 worker sleep in poll() holding the
    listener'; nginx's epoll likewise read '1 worker wait in epoll_wait(), each on its own epoll ...'."""
    assert _lone("poll", "poll") == "1 worker sleeps in poll() holding the listener"
    assert _lone("accept", "accept4").startswith("1 worker sleeps in accept4() on the listener")
    assert _lone("io_uring", "io_uring_enter").startswith("1 worker waits in io_uring_enter()")
    said = _lone("epoll", "epoll_wait", exclusive=True)
    assert said.startswith("1 worker waits in epoll_wait(), on its own epoll that watches"), said


def _thread(tid: int, call: str, exclusive: bool = False) -> Seen:
    return Seen(pid=WORKER, tid=tid, call=call, via="epoll", listeners=frozenset({41}), exclusive=exclusive,
                epoll_id=f"200:{tid}", holds=frozenset({41}))  # fmt: skip


def _busy(tid: int) -> Seen:
    return Seen(pid=WORKER, tid=tid, call="running", via="running", holds=frozenset({41}))


def test_lone_waiters_of_a_herd_under_load_are_the_herd() -> None:
    """h2o's 3 threads (each its own epoll on the listener, no EPOLLEXCLUSIVE) under wrk -c6: 4 samples of 5 saw
    one thread waiting, the others busy, and read 'epoll: 1 worker ... with one waiter there is no one else to
    wake', 'Why: only one worker waits for connections: it takes every one'; the fifth saw two: the herd."""
    from accept_order.analysis.mechanism import overall

    parent = {WORKER: MASTER}
    lone = [classify([_thread(201, "epoll_wait"), _busy(202), _busy(203)], [LISTENER], parent, {}) for _ in range(4)]
    two = classify([_thread(201, "epoll_wait"), _thread(202, "epoll_wait"), _busy(203)], [LISTENER], parent, {})
    verdict, tally = overall([*lone, two])
    assert verdict.mechanism == "epoll-herd" and len(verdict.waiters) == 2, verdict
    assert tally == {"epoll": 4, "epoll-herd": 1}, tally  # the samples as they were
    # EPOLLEXCLUSIVE lone waiters are no herd's: nginx's epoll stays epoll
    exclusive = [classify([_thread(201, "epoll_wait", True), _busy(202)], [LISTENER], parent, {}) for _ in range(3)]
    assert overall([*exclusive, two])[0].mechanism == "epoll"
    # without a sample of the herd, a lone waiter is what was seen (Caddy's one loop)
    assert overall(lone)[0].mechanism == "epoll"


def test_the_sample_shown_is_the_one_that_saw_the_most_waiters() -> None:
    """gunicorn's sync workers under wrk: one sample saw 1 of 3 in poll() and the look said 'only one worker waits
    for connections: it takes every one' though another saw 2."""
    from accept_order.analysis.mechanism import overall

    def polls(*tids: int) -> list[Seen]:
        return [Seen(pid=p, tid=p, call="poll", via="poll", listeners=frozenset({41}), holds=frozenset({41}))
                for p in tids]  # fmt: skip

    parent = dict.fromkeys((201, 202, 203), MASTER)
    one, two = classify(polls(201), [LISTENER], parent, {}), classify(polls(201, 202), [LISTENER], parent, {})
    assert overall([one, two, one])[0] == two


def test_a_worker_beside_nginxs_cache_processes_is_no_acceptor() -> None:
    """nginx with proxy_cache_path (accept_mutex on, 3 workers; or 1 worker), checked by hand: the cache manager
    and loader hold no listener and wait in epolls on their channels, whose other ends the workers hold too.
    inspect read 'fd-pass: only pid W waits on the listener; 2 processes that hold none wait on Unix sockets whose
    other end pid W holds', at 0.2 too (observe's look, 93b8bce, asks the same of the listeners' holders). An
    acceptor holds the listeners alone; nginx's master holds them beside its workers."""
    master, worker, manager, loader = 100, 201, 204, 205
    waiter = Seen(pid=worker, tid=worker, call="epoll_wait", via="epoll", listeners=frozenset({41}),
                  exclusive=False, epoll_id="201:8", holds=frozenset({41}))  # fmt: skip
    cache = [Seen(pid=p, tid=p, call="epoll_wait", via="passed", unix_ends=frozenset({71})) for p in (manager, loader)]
    parent = {worker: master, manager: master, loader: master}
    sockets = {master: frozenset({41, 70}), worker: frozenset({41, 71}), manager: frozenset({72}), loader: frozenset()}
    verdict = classify([waiter, *cache], [LISTENER], parent, sockets)
    assert verdict.mechanism == "epoll" and not verdict.fed, verdict
    # the same shape where the waiter alone holds the listener: an acceptor feeding them (Node's primary)
    alone = {**sockets, master: frozenset({70})}
    assert classify([waiter, *cache], [LISTENER], parent, alone).mechanism == "fd-pass"
