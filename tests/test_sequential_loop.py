"""The sequential client's one-at-a-time loop (loads/sequential.py): what it reads, what it records, what it
notices, what it leaves open, and which --driver it runs.

Each test drives the built-in workers (a WorkerPool) and asserts what the kernel or the workers guarantee:
the workers' own tally, SO_RCVLOWAT's wakeups, a pidfd's readiness, the process's descriptor table.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import stat
from collections import Counter
from typing import Any

import pytest

from accept_order.core.errors import PlanError, WorkerError
from accept_order.core.measures import ConnectionRecord
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.loads import sequential
from accept_order.loads.sequential import loop_for, run_sequential
from accept_order.loads.sequential_books import POLLRDHUP
from accept_order.servers.pool import WorkerPool

WORKERS = 3
REAL_POLL = select.poll


def load(connections: int, **options: Any) -> SequentialLoad:
    return SequentialLoad(connections=connections, settle=False, **options).validated()


def test_each_worker_served_what_its_own_tally_says() -> None:
    # The records' attribution against what each worker counted in its own memory (reported at stop).
    with WorkerPool(ServerSpec(mode="blocking", workers=WORKERS).validated()) as pool:
        records = run_sequential(pool, load(300))
        counters = pool.stop()
    assert [r.seq for r in records] == list(range(300))
    assert all(r.served for r in records), [r.error for r in records if not r.served][:3]
    served = Counter(r.worker for r in records)
    assert {c.index: c.accepts for c in counters} == {i: served.get(i, 0) for i in range(WORKERS)}
    assert all(r.pid == pool.pids[r.worker] for r in records if r.worker is not None)
    assert all(r.client_port for r in records)  # the port the connect bound, as the server's log names it


class _CountingPoll:
    """select.poll that notes the events each wakeup reported for a connection (not the death watch)."""

    wakeups: list[int] = []

    def __init__(self) -> None:
        self._poll = REAL_POLL()
        self._connections: set[int] = set()

    def register(self, fd: int, mask: int) -> None:
        if mask != select.POLLIN:  # the death watch registers for POLLIN alone
            self._connections.add(fd)
        self._poll.register(fd, mask)

    def unregister(self, fd: int) -> None:
        self._connections.discard(fd)
        self._poll.unregister(fd)

    def modify(self, fd: int, mask: int) -> None:
        self._poll.modify(fd, mask)

    def poll(self, timeout: int) -> list[tuple[int, int]]:
        ready = self._poll.poll(timeout)
        _CountingPoll.wakeups.extend(events for fd, events in ready if fd in self._connections)
        return ready


def test_a_reply_wakes_the_client_once_with_its_close(monkeypatch: pytest.MonkeyPatch) -> None:
    # With SO_RCVLOWAT above any reply, the kernel makes the socket readable only with the FIN: every
    # wakeup has POLLRDHUP, one per connection. Without it, the reply alone woke about a third of them.
    _CountingPoll.wakeups = []
    monkeypatch.setattr(sequential.select, "poll", _CountingPoll)
    with WorkerPool(ServerSpec(mode="blocking", workers=WORKERS).validated()) as pool:
        records = run_sequential(pool, load(300))
    assert all(r.served for r in records)
    without_fin = [events for events in _CountingPoll.wakeups if not events & POLLRDHUP]
    assert not without_fin, f"{len(without_fin)} of {len(_CountingPoll.wakeups)} wakeups came before the FIN"
    assert len(_CountingPoll.wakeups) == 300


def test_a_worker_killed_while_others_serve_stops_the_drive() -> None:
    # The other workers go on serving, so only the death watch (looked at every DEATH_CHECK_MS outside the
    # poll set) can stop the drive; every connection it drove is a record, in order, none lost.
    seen: list[ConnectionRecord] = []
    with WorkerPool(ServerSpec(mode="blocking", workers=WORKERS).validated()) as pool:

        def kill_at_50(record: ConnectionRecord) -> None:
            seen.append(record)
            if record.seq == 50:
                os.kill(pool.pids[1], signal.SIGKILL)

        with pytest.raises(WorkerError, match="worker 1"):
            run_sequential(pool, load(20_000), on_record=kill_at_50)
    assert 51 <= len(seen) < 20_000
    assert [r.seq for r in seen] == list(range(len(seen)))


class _Stop(Exception):
    pass


def open_sockets() -> set[str]:
    """This process's open sockets, by inode (`socket:[123]`): a number may be reused, an inode is not."""
    links = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # the listing's own descriptor, closed by now
            continue
    return {link for link in links if link.startswith("socket:")}


class _StopAtSettle:
    """The pool, whose settle (run before each connection) stops the drive at its `at`-th call."""

    def __init__(self, pool: WorkerPool, at: int) -> None:
        self.pool, self.at, self.calls = pool, at, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    def settle(self) -> None:
        self.calls += 1
        if self.calls == self.at:
            raise _Stop


@pytest.mark.parametrize("where", ["record", "settle"])
def test_a_drive_stopped_early_leaves_no_socket_open_and_no_record_lost(where: str) -> None:
    # Stopped by on_record (without settling: while the previous connection is recorded, the next one in
    # flight) or by settle, before a connection (the socket made ahead for it open): no socket is left
    # open, and every connection that was driven is a record.
    seen: list[ConnectionRecord] = []

    def stop_at_5(record: ConnectionRecord) -> None:
        seen.append(record)
        if where == "record" and record.seq == 5:
            raise _Stop

    with WorkerPool(ServerSpec(mode="blocking", workers=WORKERS).validated()) as pool:
        target = _StopAtSettle(pool, at=7 if where == "settle" else 0)
        before = open_sockets()
        try:
            run_sequential(
                target, SequentialLoad(connections=100, settle=where == "settle").validated(), on_record=stop_at_5
            )
        except _Stop:  # looked at here, while the traceback still holds the drive's frames and their locals
            left_open = open_sockets() - before
        else:
            pytest.fail("the drive did not stop")
    assert not left_open, left_open
    if where == "settle":  # connections 0-5 were served; the 7th settle stopped the drive before the 7th
        assert [(r.seq, r.served) for r in seen] == [(i, True) for i in range(6)]
    else:  # the 6th (seq 5) was recorded while seq 6 was in flight: seq 6 ends as aborted
        assert [r.seq for r in seen][:6] == list(range(6))
        assert seen[-1].seq == 6 and seen[-1].error is not None and seen[-1].error.startswith("aborted")


def test_refused_and_timed_out_connections_are_failed_records() -> None:
    with WorkerPool(ServerSpec(mode="blocking", workers=1).validated()) as pool:
        address = pool.address
    # The pool has closed its socket: nothing listens on that port now.
    with WorkerPool(ServerSpec(mode="blocking", workers=1, work_us=2_000_000).validated()) as slow:

        class Elsewhere:
            def __getattr__(self, name: str) -> Any:
                return address if name == "address" else getattr(slow, name)

        refused = run_sequential(Elsewhere(), load(3))
        late = run_sequential(slow, load(2, timeout_s=0.2))
    assert [r.error and r.error.split(":")[0] for r in refused] == ["ECONNREFUSED"] * 3
    assert all(r.worker is None and r.pid is None for r in refused)
    assert [r.error for r in late] == ["timeout: no answer within 0.2 s"] * 2
    assert all(r.latency_us >= 200_000 for r in late)


def test_the_driver_it_runs() -> None:
    assert loop_for("auto") == "epoll"
    assert loop_for("epoll") == "epoll"
    with pytest.raises(PlanError, match="--driver io_uring: the sequential client has no io_uring loop"):
        loop_for("io_uring")


def test_io_uring_is_refused_before_any_connection() -> None:
    with WorkerPool(ServerSpec(mode="blocking", workers=1).validated()) as pool:
        with pytest.raises(PlanError):
            run_sequential(pool, load(3, driver="io_uring"))
        counters = pool.stop()
    assert [c.accepts for c in counters] == [0]


class _LookingAtSettle:
    """The pool, whose settle (run before each connection) notes this process's sockets to the pool."""

    def __init__(self, pool: WorkerPool) -> None:
        self.pool = pool
        self.open_at_settle: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    def settle(self) -> None:
        self.pool.settle()
        self.open_at_settle.append(_connected_to(self.pool.address))


def _connected_to(address: tuple[str, int]) -> int:
    """This process's TCP sockets whose peer is `address`, from its own descriptors (psutil's net_connections
    read the namespace's whole /proc/net/tcp for them: 30-170 ms a call where the machine holds 12,000-40,000
    TIME_WAITs, 3.6 CPU-s of this file's 4.3 at load 5)."""
    count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if not stat.S_ISSOCK(os.fstat(int(name)).st_mode):
                continue
            with socket.socket(fileno=os.dup(int(name))) as sock:
                if sock.type == socket.SOCK_STREAM and sock.getpeername()[:2] == address:
                    count += 1
        except OSError:  # the listing's own descriptor, gone since; a socket not connected
            continue
    return count


def test_with_settling_the_previous_connection_is_closed_before_the_next() -> None:
    # A server may still act on the client's close, and settling promises idle, sleeping workers when the
    # next connection arrives: the previous one is closed before each settle (and so before the connect).
    with WorkerPool(ServerSpec(mode="blocking", workers=WORKERS).validated()) as pool:
        target = _LookingAtSettle(pool)
        records = run_sequential(target, SequentialLoad(connections=20).validated())
    assert all(r.served for r in records)
    assert target.open_at_settle == [0] * 20
