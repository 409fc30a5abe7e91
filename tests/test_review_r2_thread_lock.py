"""A review of 118f8b9 (a thread of the waiter's own process is no lock loser): right for a second loop in an
epoll without the listener (Node's primary), wrong for threads waiting for the lock itself. uWSGI with one
process of 4 threads and --thunder-lock (uwsgi --processes 1 --threads 4 --thunder-lock, checked by hand):
one thread in epoll_wait on the listener, three in FUTEX_LOCK_PI. Version 0.2 read 'accept-mutex (uwsgi's
thunder-lock)'; 118f8b9 read 'epoll: 1 worker ... with one waiter there is no one else to wake', and 'Why: only
one worker waits for connections: it takes every one', though the four threads take turns at the lock."""

from __future__ import annotations

from accept_order.analysis.mechanism import Listener, Seen, classify

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
