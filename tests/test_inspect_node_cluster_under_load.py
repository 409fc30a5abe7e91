"""inspect of a Node cluster (SCHED_RR: the primary accepts and hands each connection over IPC) while wrk held
six keep-alive connections to it: 'node, 2 workers', 'Mechanism: accept-mutex: only 1 of 2 workers has the
listener in what it waits on; the others hold it but wait in an epoll without it: a lock decides who listens'
(3 runs of 3). The two 'workers' were the primary's own threads (its loop on the listener, a second thread in
an epoll without it), and the three real workers, busy, were 'process' rows. At idle it read fd-pass. Now a
thread of the waiter's own process is no lock loser, and a busy main thread of a process that holds no
listener is fed through the one epoll that watches its Unix socket to the acceptor: fd-pass (3 of 3)."""

from __future__ import annotations

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener, Seen
from accept_order.experiments.inspect.sample import resolve
from accept_order.probes.fd_table import OpenFile
from accept_order.probes.proc_waits import ThreadWait

LISTENER = Listener(inode=41, address="127.0.0.1", port=18093)
PRIMARY, WORKERS = 100, (201, 202, 203)


def test_a_thread_of_the_waiters_own_process_is_no_lock_loser() -> None:
    loop = Seen(pid=PRIMARY, tid=PRIMARY, call="epoll_pwait", via="epoll", listeners=frozenset({41}),
                exclusive=False, epoll_id="100:14", holds=frozenset({41}))  # fmt: skip
    other = Seen(pid=PRIMARY, tid=PRIMARY + 2, call="epoll_pwait", via="idle", holds=frozenset({41}))
    busy = [Seen(pid=pid, tid=pid, call="running", via="running") for pid in WORKERS]
    verdict = classify([loop, other, *busy], [LISTENER], {PRIMARY: 1, **dict.fromkeys(WORKERS, PRIMARY)}, {})
    assert verdict.mechanism != "accept-mutex" and not verdict.losers, verdict


def test_a_busy_worker_main_thread_is_fed_by_the_acceptor() -> None:
    # the worker's epoll (fd 14) watches its end (inode 71) of a socketpair whose other end (81) the primary holds
    files = {14: OpenFile(14, "eventpoll", 9, fdinfo="tfd:       3 events:       19 data: 3  pos:0 ino:47 sdev:8\n")}
    files[3] = OpenFile(3, "socket", 71)
    busy = resolve(201, ThreadWait(201, "node", "running"), files, frozenset({41}), {71: 81}, threads=7)
    assert busy.via == "passed" and busy.unix_ends == frozenset({81}), busy
    helper = resolve(201, ThreadWait(205, "node", "running"), files, frozenset({41}), {71: 81}, threads=7)
    assert helper.via == "running", helper  # another busy thread of it: not the loop that is fed
    loop = Seen(pid=PRIMARY, tid=PRIMARY, call="epoll_pwait", via="epoll", listeners=frozenset({41}),
                exclusive=False, epoll_id="100:14", holds=frozenset({41}))  # fmt: skip
    verdict = classify([loop, busy], [LISTENER], {PRIMARY: 1, 201: PRIMARY}, {PRIMARY: frozenset({41, 81})})
    assert verdict.mechanism == "fd-pass" and verdict.fed == ((201, 201),), verdict
