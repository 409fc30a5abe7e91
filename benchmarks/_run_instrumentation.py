"""bench_run.py part 3, instrumentation cost: the C client against bare forked blocking-accept workers that
count in memory, write a pipe per connection, or put on a multiprocessing.Queue per connection; shows why
workers report once at the end. Apart from bench_run.py to keep each file under 400 lines."""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import signal
import socket
import statistics
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import psutil
from _run_common import c_client, chunks, run_c


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no orphan if we are killed
    except (OSError, AttributeError):
        pass


def _bare_worker(sock: socket.socket, report: Callable[[int], None]) -> None:
    """The seed's blocking-accept worker, reporting each connection the way `report` does."""
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    reply = f"worker 0 pid {os.getpid()}\n".encode()
    while True:
        conn, _ = sock.accept()
        conn.sendall(reply)
        conn.close()
        report(1)


def _drain(read_fd: int, write_fd: int) -> None:
    _die_with_parent()
    os.close(write_fd)  # so that the read sees EOF once every worker is gone
    while os.read(read_fd, 65536):
        pass


def _drain_queue(queue: Any) -> None:
    _die_with_parent()
    while True:  # until bare_server ends it, once the workers are gone
        queue.get()


@contextmanager
def bare_server(kind: str, workers: int) -> Iterator[tuple[tuple[str, int], list[int]]]:
    """Blocking-accept workers on a fresh socket, reporting per `kind`; yields (address, pids of the
    workers and of the reader), and ends them all.

    memory: a counter in the worker's memory (what accept_order's workers do, reported once at the end);
    pipe: one write per connection to a pipe a reader process drains;
    queue: one multiprocessing.Queue.put per connection, drained by a reader process.
    """
    ctx = mp.get_context("fork")
    sock = socket.create_server(("127.0.0.1", 0), backlog=511)
    procs: list[Any] = []
    drain: Any = None
    queue: Any = None
    read_fd = write_fd = -1
    counted = [0]

    def in_memory(n: int) -> None:
        counted[0] += n

    def to_pipe(n: int) -> None:
        os.write(write_fd, b"1 0\n")

    def to_queue(n: int) -> None:
        queue.put((0, n))

    try:
        report: Callable[[int], None] = in_memory
        if kind == "pipe":
            read_fd, write_fd = os.pipe()
            report = to_pipe
            drain = ctx.Process(target=_drain, args=(read_fd, write_fd))
        elif kind == "queue":
            queue = ctx.Queue()
            report = to_queue
            drain = ctx.Process(target=_drain_queue, args=(queue,))
        if drain is not None:
            drain.start()
        for _ in range(workers):
            p = ctx.Process(target=_bare_worker, args=(sock, report))
            p.start()
            procs.append(p)
        yield sock.getsockname(), [p.pid for p in (*procs, drain) if p is not None]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(3)
            if p.exitcode is None:
                p.kill()
                p.join()
        if queue is not None:
            # No sentinel put from here: a worker ended while its feeder thread was writing an item leaves the
            # queue's write lock (a semaphore the processes share) taken for good, and a put's feeder then waits
            # on it for ever (the smoke test's bench hung so beside the whole suite, killed at its 180 s). The
            # reader is ended as the workers were; this process never put, so it has no feeder to join.
            drain.terminate()
            queue.close()
        if write_fd >= 0:
            os.close(write_fd)  # the reader sees EOF now that the workers are gone
        if drain is not None:
            drain.join(3)
            if drain.exitcode is None:
                drain.kill()
                drain.join()
        if read_fd >= 0:
            os.close(read_fd)
        sock.close()


def server_cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system) the given processes have used so far."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def bench_instrumentation(connections: int, rounds: int, workers: int) -> None:
    parts = chunks(connections, rounds)
    kinds = ("memory", "pipe", "queue")
    print(
        f"== 3. instrumentation cost: C client, {connections} connections per way of reporting, "
        f"{workers} bare blocking-accept workers each, {len(parts)} alternating rounds"
    )
    binary = c_client()
    if binary is None:
        return
    seconds: dict[str, list[float]] = {kind: [] for kind in kinds}
    cpu = dict.fromkeys(kinds, 0.0)
    with ExitStack() as stack:
        # All three servers stay up (idle workers sleep in accept and cost nothing) and the rounds
        # rotate among them, so the machine's drifting load falls on each alike.
        servers = {kind: stack.enter_context(bare_server(kind, workers)) for kind in kinds}
        for index, count in enumerate(parts):
            for kind in kinds[index % 3 :] + kinds[: index % 3]:
                address, pids = servers[kind]
                before = server_cpu_s(pids)
                elapsed, failed = run_c(binary, address, count)
                cpu[kind] += server_cpu_s(pids) - before
                seconds[kind].append(elapsed)
                if failed:
                    print(f"  ({kind}: {failed} failed in round {index + 1})")
    for kind in kinds:
        rate = connections / sum(seconds[kind])
        slower = statistics.median(1 - m / k for m, k in zip(seconds["memory"], seconds[kind], strict=True))
        cost = "reference" if kind == "memory" else f"{-100 * slower:+5.1f}% vs memory"
        print(
            f"{kind:7}: {rate:6.0f} conn/s ({cost}, median of rounds); "
            f"server CPU {1e6 * cpu[kind] / connections:5.1f} us/conn (workers + reader)"
        )
