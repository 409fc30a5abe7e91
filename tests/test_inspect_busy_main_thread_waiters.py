"""inspect of uvicorn --workers 3 while wrk held six keep-alive connections: 'uvicorn, 0 workers', 'Mechanism:
not seen: no thread waits on a listener at this moment (all busy?)', 3 looks of 3. Each worker has a helper
thread, and a running thread counted as waiting in its process's one epoll on the listener only where the
process had one thread. A busy main thread now counts so too: 'epoll-herd (uvicorn's asyncio or uvloop)', 3 workers."""

from __future__ import annotations

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener
from accept_order.experiments.inspect.sample import resolve
from accept_order.probes.fd_table import OpenFile
from accept_order.probes.proc_waits import ThreadWait

LISTENER = Listener(inode=0x29, address="127.0.0.1", port=18094)
# each worker's epoll (fd 5) watches the listener (fd 3, inode 0x29) without EPOLLEXCLUSIVE
FILES = {
    3: OpenFile(3, "socket", 0x29),
    5: OpenFile(5, "eventpoll", 9, fdinfo="tfd:        3 events:       19 data: 3  pos:0 ino:29 sdev:8\n"),
}


def test_busy_main_threads_of_two_thread_workers_wait_in_their_epolls() -> None:
    seen = [
        resolve(pid, ThreadWait(pid, "python3", "running"), FILES, frozenset({0x29}), {}, threads=2)
        for pid in (201, 202, 203)
    ]
    assert all(s.via == "epoll" and s.listeners == {0x29} for s in seen), seen
    verdict = classify(seen, [LISTENER], dict.fromkeys((201, 202, 203), 100), {})
    assert verdict.mechanism == "epoll-herd" and len(verdict.waiters) == 3, verdict
    helper = resolve(201, ThreadWait(204, "python3", "running"), FILES, frozenset({0x29}), {}, threads=2)
    assert helper.via == "running", helper  # a helper thread running is not the loop


def test_a_busy_main_thread_beside_its_loops_waiter_is_not_a_second_waiter() -> None:
    """A Go server (Caddy) under load: its main thread running, another thread in the netpoller's epoll_pwait
    on the same epoll. Counting both made two waiters on one epoll: epoll-shared. One loop, one waiter."""
    from accept_order.experiments.inspect.sample import _one_loop

    main = resolve(301, ThreadWait(301, "caddy", "running"), FILES, frozenset({0x29}), {}, threads=8)
    poller = resolve(301, ThreadWait(305, "caddy", "epoll_pwait", fd=5), FILES, frozenset({0x29}), {}, threads=8)
    assert main.via == "epoll" and poller.via == "epoll" and main.epoll_id == poller.epoll_id
    seen = _one_loop([main, poller])
    assert [s.via for s in seen] == ["running", "epoll"], seen
    assert classify(seen, [LISTENER], {301: 1}, {}).mechanism == "epoll", classify(seen, [LISTENER], {301: 1}, {})
    assert _one_loop([main]) == [main]  # alone, the busy main thread stands for its loop (uvicorn's workers)
