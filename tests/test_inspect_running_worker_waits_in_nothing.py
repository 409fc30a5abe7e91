"""inspect of nginx under wrk, one worker running at the look: 'Mechanism: epoll ... 4 workers wait in
epoll_wait(), running(), each on its own epoll that watches the listener with EPOLLEXCLUSIVE'. A running worker
waits in no system call ('running()' is none); its epoll is still known, so it counts, said apart."""

from __future__ import annotations

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener, Seen

LISTENER = Listener(inode=41, address="127.0.0.1", port=8090)


def worker(pid: int, call: str) -> Seen:
    return Seen(pid=pid, tid=pid, call=call, via="epoll", listeners=frozenset({41}), exclusive=True,
                epoll_id=f"epoll-of-{pid}", holds=frozenset({41}))  # fmt: skip


def evidence(calls: list[str]) -> str:
    seen = [worker(101 + i, call) for i, call in enumerate(calls)]
    verdict = classify(seen, [LISTENER], {s.pid: 100 for s in seen}, {})
    assert verdict.mechanism == "epoll", verdict
    return verdict.evidence[0]


def test_a_running_worker_is_not_said_to_wait_in_running() -> None:
    said = evidence(["epoll_wait", "running", "epoll_wait", "epoll_wait"])
    assert "running()" not in said, said
    assert said.startswith("4 workers wait in epoll_wait() (1 running at the look), each on its own epoll"), said


def test_all_running() -> None:
    said = evidence(["running", "running"])
    assert said.startswith("2 workers wait in their loops (all running at the look), each on its own epoll"), said
    assert evidence(["epoll_wait", "epoll_wait"]).startswith("2 workers wait in epoll_wait(), each")
