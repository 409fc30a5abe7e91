"""Apache event (3 children of 4 threads, MaxRequestWorkers 12) after wrk -c12 -H 'Connection: close' stops
accepting for seconds ('server reached MaxRequestWorkers' in its error log): ss -ltn showed Recv-Q 25 at every
look, its listener threads asleep in epolls without the listener, its workers in futex, nothing running. observe
said 'no connection was accepted in 3.0 s: the server got no new connections while observed' (its own queue line
below: 'at most 25 waiting, 25.0 on average'), and inspect 'no thread waits on a listener at this moment (all
busy?)' of a server where none was busy."""

from __future__ import annotations

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener, Seen

LISTENER = Listener(7, "127.0.0.1", 8080)


def _thread(tid: int, via: str, call: str) -> Seen:
    return Seen(pid=tid // 10, tid=tid, call=call, via=via, holds=frozenset({7}))


def test_inspect_says_the_listeners_were_taken_out_where_nothing_runs() -> None:
    asleep = [_thread(t, "idle", "epoll_wait") for t in (11, 21, 31)] + [_thread(12, "other", "futex")]
    verdict = classify(asleep, [LISTENER], {1: 0, 2: 0, 3: 0}, {})
    assert verdict.mechanism is None
    said = " ".join(verdict.evidence)
    assert "all busy" not in said, said
    assert said.startswith("no thread waits on a listener at this moment and none is running: 3 threads holding one"), (
        said
    )
    busy = [*asleep, _thread(13, "running", "running")]
    assert classify(busy, [LISTENER], {1: 0, 2: 0, 3: 0}, {}).evidence == (
        "no thread waits on a listener at this moment (all busy?)",
    )
