"""The closed-loop load generator: every request ends served or failed with its errno, its driver
processes are torn down on every path, and the parent merges exact tallies."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import struct
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import gone

from accept_order.core.errors import LoadError, PlanError
from accept_order.core.protocol import BAD_REPLY, NO_REPLY, TIMEOUT, describe_error
from accept_order.core.run_warnings import WarningKind
from accept_order.core.spec import ConcurrentLoad, ServerSpec, check_concurrency, open_file_limit
from accept_order.core.target import ReplyAttribution
from accept_order.loads.generator import (
    DriverStats,
    LoadGenerator,
    driver_warnings,
    merge,
    run_load,
    split,
)
from accept_order.servers.pool import WorkerPool

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll")
# The test servers below are not accept-order workers: no reply line names one of their (no) workers.
NOBODY = ReplyAttribution(())


def load(**options: Any) -> ConcurrentLoad:
    """A closed-loop load from the settings given; by default neither a count nor a duration."""
    return ConcurrentLoad(**{"connections": None, **options})


# -- pure parts ----------------------------------------------------------------------------------


def test_split_shares_differ_by_at_most_one() -> None:
    assert split(10, 3) == [4, 3, 3]
    assert split(2, 2) == [1, 1]
    assert split(1, 1) == [1]
    assert sum(split(100_001, 7)) == 100_001


@pytest.mark.parametrize("bad", [0, -1, -200])
def test_concurrency_must_be_positive(bad: int) -> None:
    with pytest.raises(PlanError, match="--concurrency must be between 1 and"):
        check_concurrency(bad)


def test_concurrency_above_open_file_limit_is_refused() -> None:
    limit = open_file_limit()
    with pytest.raises(PlanError, match=f"open-file limit {limit}"):
        check_concurrency(limit + 1)
    check_concurrency(1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give --connections or --duration"),
        ({"connections": 10, "duration_s": 1.0}, "not both"),
        ({"connections": 0}, "--connections must be between 1"),
        ({"duration_s": -1.0}, "--duration must be between 0.001"),
        ({"connections": 10, "driver_procs": 0}, "--driver-procs must be between 1"),
        ({"connections": 10, "concurrency": 0}, "--concurrency"),
    ],
)
def test_bad_load_settings_fail_before_any_process_starts(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(PlanError, match=message):
        LoadGenerator(("127.0.0.1", 9), NOBODY, load(**kwargs))


def test_no_more_drivers_than_slots_or_requests() -> None:
    gen = LoadGenerator(("127.0.0.1", 9), NOBODY, load(connections=3, concurrency=2, driver_procs=8))
    assert [c.slots for c in gen.configs] == [1, 1]
    assert [c.requests for c in gen.configs] == [2, 1]
    assert gen.total == 3
    assert LoadGenerator(("127.0.0.1", 9), NOBODY, load(duration_s=1.0, concurrency=5, driver_procs=2)).total is None


def test_merge_is_exact() -> None:
    reports = [
        {
            "counts": [[100, 2], [250, 1]],
            "errors": {"ECONNREFUSED": 1},
            "served": {0: 2, 1: 1},
            "start": 10.0,
            "end": 11.0,
            "stats": DriverStats(0, 5, 4, 1.0, 0.5, 0.1).to_dict(),
        },
        {
            "counts": [[100, 1]],
            "errors": {"timeout": 2},
            "served": {1: 1},
            "start": 10.5,
            "end": 12.0,
            "stats": DriverStats(1, 5, 3, 1.5, 0.4, None).to_dict(),
        },
    ]
    result = merge(reports)
    assert result.histogram.count == 4 and result.histogram.mean_us == (100 * 3 + 250) / 4
    assert result.errors == Counter({"ECONNREFUSED": 1, "timeout": 2})
    assert result.served == Counter({0: 2, 1: 2})
    assert result.wall_s == 2.0  # first start to last end
    assert (result.ok, result.failed, result.driven) == (4, 3, 7)
    assert result.throughput == 2.0
    assert [d.index for d in result.drivers] == [0, 1]


def test_driver_warnings() -> None:
    busy = DriverStats(0, 10, 100, wall_s=2.0, cpu_s=1.9, runqueue_s=0.0)
    starved = DriverStats(1, 10, 100, wall_s=2.0, cpu_s=0.2, runqueue_s=1.0)
    idle = DriverStats(2, 10, 100, wall_s=2.0, cpu_s=0.2, runqueue_s=0.1)
    assert busy.saturated and not starved.saturated
    assert starved.busy_fraction == pytest.approx(0.6)
    notes = driver_warnings([busy, starved, idle], workers=2, cpus=2)
    assert [n.kind for n in notes] == [WarningKind.DRIVER_SATURATED, WarningKind.DRIVERS_STARVED]
    assert notes[0].figures == {"driver": 0, "percent": pytest.approx(95)}
    assert notes[1].figures == {"procs": 3, "workers": 2, "cpus": 2, "percent": pytest.approx(50)}
    assert str(notes[0]).startswith("driver 0 used 95% of a CPU")
    assert "share 2 CPUs" in str(notes[1]) and "50%" in str(notes[1])
    assert driver_warnings([idle], workers=2, cpus=2) == []


def test_error_names_read_well() -> None:
    assert describe_error("ECONNREFUSED") == f"ECONNREFUSED ({os.strerror(errno.ECONNREFUSED)})"
    assert describe_error(TIMEOUT) == TIMEOUT


# -- against real workers ------------------------------------------------------------------------


@pytest.fixture
def pool() -> Iterator[WorkerPool]:
    if not sys.platform.startswith("linux"):
        pytest.skip("needs epoll")
    with WorkerPool(ServerSpec(mode="epoll", workers=2).validated()) as p:
        yield p


@LINUX_ONLY
def test_every_request_is_served_and_counted(pool: WorkerPool) -> None:
    ticks: list[int] = []
    result = run_load(
        pool.address,
        pool.attribution,
        load(connections=300, concurrency=10, driver_procs=2),
        on_tick=lambda done, _t: ticks.append(done),
    )
    assert (result.ok, result.failed) == (300, 0)
    assert sum(result.served.values()) == 300 and set(result.served) <= {0, 1}
    assert [d.requests for d in result.drivers] == [150, 150]
    assert [d.slots for d in result.drivers] == [5, 5]
    # every served connection is one sample, and none took no time at all (connect, request, reply)
    assert result.histogram.count == 300 and (result.histogram.min_us or 0) > 0
    assert ticks == sorted(ticks)  # progress never goes back


@LINUX_ONLY
def test_duration_run_stops_and_accounts_for_everything(pool: WorkerPool) -> None:
    result = run_load(pool.address, pool.attribution, load(duration_s=0.3, concurrency=4, driver_procs=2))
    assert result.ok > 0
    assert result.driven == sum(d.requests for d in result.drivers)
    assert result.wall_s >= 0.3


# -- faults: every failure is counted, with its errno --------------------------------------------


@contextlib.contextmanager
def closed_port() -> Iterator[int]:
    """A port bound but not listening: connecting to it is refused, and nobody else can take it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


@contextlib.contextmanager
def serve(handle: Callable[[socket.socket], None] | None) -> Iterator[int]:
    """A listener in a thread that runs `handle` on every connection; None: never accept."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    listener.settimeout(0.05)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                handle(conn)  # type: ignore[misc]

    thread = threading.Thread(target=loop, daemon=True) if handle else None
    if thread:
        thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        if thread:
            thread.join(5)
        listener.close()


def reset(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST


@LINUX_ONLY
def test_refused_connections_are_errors_with_their_errno() -> None:
    with closed_port() as port:
        result = run_load(("127.0.0.1", port), NOBODY, load(connections=20, concurrency=4, driver_procs=2))
    assert result.ok == 0
    assert result.errors == Counter({"ECONNREFUSED": 20})


@pytest.mark.parametrize(
    ("handle", "expected"),
    [
        (reset, "ECONNRESET"),
        (lambda conn: None, NO_REPLY),
        (lambda conn: conn.sendall(b"hello\n"), BAD_REPLY),
    ],
    ids=["reset", "no-reply", "bad-reply"],
)
@LINUX_ONLY
def test_failed_replies_are_counted_never_dropped(handle: Callable[[socket.socket], None], expected: str) -> None:
    with serve(handle) as port:
        result = run_load(("127.0.0.1", port), NOBODY, load(connections=12, concurrency=3, driver_procs=1))
    assert result.ok == 0
    assert result.errors == Counter({expected: 12})


@LINUX_ONLY
def test_requests_without_an_answer_time_out() -> None:
    with serve(None) as port:  # the kernel completes the handshake; nobody ever accepts
        result = run_load(
            ("127.0.0.1", port), NOBODY, load(connections=4, concurrency=4, driver_procs=2, timeout_s=0.3)
        )
    assert result.errors == Counter({TIMEOUT: 4})


# -- teardown ------------------------------------------------------------------------------------


class Stop(Exception):
    pass


@LINUX_ONLY
def test_an_exception_in_the_parent_ends_every_driver() -> None:
    with serve(None) as port:
        gen = LoadGenerator(("127.0.0.1", port), NOBODY, load(duration_s=30.0, concurrency=4, driver_procs=2))
        pids: list[int] = []

        def tick(done: int, elapsed: float) -> None:
            pids.extend(p.pid for p in gen.procs)
            raise Stop

        with pytest.raises(Stop), gen:
            gen.run(tick)
    assert len(pids) == 2
    assert all(not p.is_alive() for p in gen.procs)
    assert gone(pids)


@LINUX_ONLY
def test_a_driver_that_dies_is_named() -> None:
    with serve(None) as port:
        gen = LoadGenerator(("127.0.0.1", port), NOBODY, load(duration_s=30.0, concurrency=4, driver_procs=2))

        def tick(done: int, elapsed: float) -> None:
            victim = gen.procs[1]
            if victim.is_alive():
                os.kill(victim.pid, signal.SIGKILL)

        with pytest.raises(LoadError, match=r"driver 1 \(pid \d+\) died with exit code -9"), gen:
            gen.run(tick)
    assert gone([p.pid for p in gen.procs])


def test_an_open_loops_drivers_take_turns_instead_of_starting_together() -> None:
    """Driver i of an open loop at R/s starts i/R after the start: each driver's own schedule (R/P) then fills
    the gaps of the others', as one driver at R would. Every driver started at once: the arrivals came in
    bunches of --driver-procs, and --rate 10 --duration 1s over 4 drivers drove 12 (3 each, due at 0, 0.4, 0.8)."""
    gen = LoadGenerator(("127.0.0.1", 9), NOBODY, load(rate=10.0, duration_s=1.0, concurrency=8, driver_procs=4))
    assert [c.offset_s for c in gen.configs] == [0.0, 0.1, 0.2, 0.3]
    assert [c.rate for c in gen.configs] == [2.5] * 4
    closed = LoadGenerator(("127.0.0.1", 9), NOBODY, load(duration_s=1.0, concurrency=8, driver_procs=4))
    assert {c.offset_s for c in closed.configs} == {0.0}  # a closed loop starts every slot at once


@LINUX_ONLY
@pytest.mark.parametrize("driver", ["epoll", "auto"])
def test_an_open_loop_over_several_drivers_drives_its_rate_times_its_duration(pool: WorkerPool, driver: str) -> None:
    """Due at 0, 0.1, ..., 0.9 s over four drivers: at most ten connections in one second (a driver running
    late may miss its last one before the deadline, never start more)."""
    result = run_load(
        pool.address,
        pool.attribution,
        load(rate=10.0, duration_s=1.0, concurrency=8, driver_procs=4, driver=driver),
    )
    assert 1 <= result.driven <= 10, [d.requests for d in result.drivers]
