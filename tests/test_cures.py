"""The two cures seed 004 names that are not kernel queue orders: passing descriptors from one acceptor
(fd-pass) and nginx's accept mutex (accept-mutex). What is asserted is what each mechanism guarantees:
the acceptor's round-robin is exactly 0 1 2 0 1 2; an idle lock holder that nobody contends with within
--mutex-delay keeps every connection; an acceptor never loses a connection to a worker that leaves."""

from __future__ import annotations

import pytest

from accept_order import api
from accept_order.core.spec import ConcurrentLoad, SequentialLoad, ServerSpec
from accept_order.core.waiting import wait_for
from accept_order.experiments.order.result import RunResult
from accept_order.experiments.session import run_sequential
from accept_order.servers.pool import WorkerPool


def _sequence(result: RunResult) -> list[int | None]:
    return [r.worker for r in result.records]


@pytest.mark.parametrize("policy", ["round-robin", "least-busy"])
def test_fd_pass_idle_order_is_exactly_round_robin(policy: str) -> None:
    result = run_sequential(ServerSpec(mode="fd-pass", workers=3, policy=policy), SequentialLoad(connections=9))
    assert _sequence(result) == [0, 1, 2, 0, 1, 2, 0, 1, 2]
    assert result.verdict.model == "round-robin" and result.verdict.expected
    acceptor = result.evidence["acceptor"]
    assert acceptor["passed"] == [3, 3, 3] and acceptor["lost"] == 0 and acceptor["policy"] == policy
    assert acceptor["cpu_s"] >= 0 and acceptor["pid"] not in [c.pid for c in result.counters]


def test_fd_pass_round_robin_ignores_who_is_busy() -> None:
    """Under a load, round-robin still hands out turns: the counts differ by at most one per worker."""
    result = api.latency(
        ServerSpec(mode="fd-pass", workers=3, work_us=300),
        ConcurrentLoad(connections=600, concurrency=12, driver_procs=1),
    )
    assert result.errors == {} and sum(result.served) == 600
    passed = result.evidence["acceptor"]["passed"]
    assert sum(passed) == 600 and max(passed) - min(passed) <= 1
    assert list(result.served) == passed  # the workers answered exactly what they were handed


def test_least_busy_serves_everything_it_was_handed() -> None:
    result = api.latency(
        ServerSpec(mode="fd-pass", workers=3, work_us=300, policy="least-busy"),
        ConcurrentLoad(connections=600, concurrency=12, driver_procs=1),
    )
    assert result.errors == {} and sum(result.served) == 600
    assert list(result.served) == result.evidence["acceptor"]["passed"]


def test_accept_mutex_idle_holder_keeps_every_connection() -> None:
    """With a delay far longer than the run, nobody but the first holder ever tries the lock again."""
    spec = ServerSpec(mode="accept-mutex", workers=3, mutex_delay_ms=60_000)
    result = run_sequential(spec, SequentialLoad(connections=12))
    assert _sequence(result) == [0] * 12
    assert result.verdict.model == "lock-holder" and result.verdict.expected


def test_accept_mutex_others_take_over_after_the_delay_under_load() -> None:
    """Under a load the holder is busy serving when the others' delay runs out: every worker gets some."""
    result = api.latency(
        ServerSpec(mode="accept-mutex", workers=3, work_us=2000, mutex_delay_ms=5),
        ConcurrentLoad(connections=400, concurrency=6, driver_procs=1),
    )
    assert result.errors == {} and sum(result.served) == 400
    assert all(n > 0 for n in result.served), result.served
    empty = sum(c.empty or 0 for c in result.counters)
    assert empty > 0  # waking after the delay to find the lock taken is an empty wakeup


def lock_holders(pids: list[int]) -> list[int]:
    """Which of `pids` hold a POSIX record lock, from the kernel's /proc/locks (the accept mutex is one).
    A line reads "1: POSIX  ADVISORY  WRITE 4242 00:2a:1234 0 EOF"; a blocked waiter's has "->" first.
    The file is a seq_file read in pages: another process's lock added while it is read shifts the list, so
    one lock can be listed twice (seen in a parallel CI run) -- each holder is named once."""
    with open("/proc/locks") as f:
        rows = [line.split() for line in f]
    held = {int(r[4]) for r in rows if len(r) > 4 and r[1] == "POSIX" and r[4].isdigit() and int(r[4]) in pids}
    return sorted(held, key=pids.index)


def test_a_killed_lock_holder_does_not_stop_the_server() -> None:
    """SIGKILL while holding the lock: the kernel frees a dead process's record locks (nginx's master must
    force-unlock its shared-memory one), so the other worker takes the lock and every connection."""
    import socket

    spec = ServerSpec(mode="accept-mutex", workers=2, mutex_delay_ms=20)
    with WorkerPool(spec.validated()) as pool:
        first, second = pool.pids
        # Workers start one at a time, each asleep before the next: worker 0 took the lock first and sleeps
        # holding it, and worker 1 found it taken.
        assert lock_holders([first, second]) == [first]
        assert pool.retire(0, "kill")
        for _ in range(3):
            with socket.create_connection(pool.address, timeout=5) as conn:
                assert conn.recv(100).startswith(b"worker 1 ")
        # Between connections the holder takes the lock back before it waits: it is worker 1's now.
        assert wait_for(lambda: lock_holders([first, second]) == [second], 5), lock_holders([first, second])


def test_fd_pass_worker_that_leaves_loses_nothing() -> None:
    import socket

    def ask() -> bytes:
        with socket.create_connection(pool.address, timeout=5) as conn:
            return conn.recv(100).split()[1]

    spec = ServerSpec(mode="fd-pass", workers=3)
    with WorkerPool(spec.validated()) as pool:
        assert pool.retire(1, "leave", timeout_s=0.2) is False  # nothing wakes it yet: it is still there
        assert [ask() for _ in range(3)] == [b"0", b"1", b"2"]  # handed one more before it noticed
        # It served that one, told the acceptor, took what was already on its way, and left.
        assert wait_for(lambda: pool.procs[1].exitcode is not None, 5)
        assert [ask() for _ in range(6)] == [b"0", b"2"] * 3
        counters = pool.stop()
        assert [c.accepts for c in counters] == [4, 1, 4]
        assert pool.helper.report is not None and pool.helper.report["lost"] == 0


def test_lock_holder_names_whichever_worker_took_the_lock_first() -> None:
    """nginx's accept_mutex: one worker keeps every sequential connection, but which one varies by run."""
    from accept_order.analysis.order import verdict
    from accept_order.core.measures import ConnectionRecord

    for holder in range(3):
        records = [ConnectionRecord(i, holder, 100 + holder, 1000 * i, 100) for i in range(12)]
        result = verdict(records, 3, "lock-holder", "why")
        assert result.model == "lock-holder" and result.expected, (holder, result)


def _uring_or_skip() -> None:
    from accept_order.servers.modes import MODES

    reason = MODES["io-uring"].unavailable()
    if reason:
        pytest.skip(reason)


def test_io_uring_first_armed_worker_takes_every_connection_even_when_busy() -> None:
    """A multishot accept keeps its place in the socket's wait queue, and the kernel accepts for it even while
    its worker is busy: worker 0 (armed first) gets all, idle or not."""
    _uring_or_skip()
    idle = run_sequential(ServerSpec(mode="io-uring", workers=3), SequentialLoad(connections=9))
    assert _sequence(idle) == [0] * 9 and idle.verdict.model == "first-registered"
    busy = run_sequential(
        ServerSpec(mode="io-uring", workers=3, work_us=50_000), SequentialLoad(connections=6, gap_ms=10, settle=False)
    )
    assert _sequence(busy) == [0] * 6  # while 1 and 2 sat idle
    assert busy.counters[0].max_batch > 1  # the completions queued up while it was busy


def test_io_uring_without_its_binding_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from accept_order.servers.modes import MODES, io_uring

    def missing() -> None:
        raise ImportError("No module named 'uring_api'")

    monkeypatch.setattr(io_uring, "_binding", missing)
    assert MODES["io-uring"].unavailable() == (
        "needs the optional io_uring binding: pip install 'accept-order[uring]'"
        ", or from a clone: pip install '.[uring]'"
    )
