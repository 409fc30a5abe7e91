"""Speed of the harness, each figure next to a reference measured in the same run.

1. `accept-order run --mode epoll` end to end (start, 6 connections, report, teardown), wall time over
   several repetitions, against the 1 s target, with `python -c pass` as the interpreter's floor.
2. Connection rate: sequential connections at 3 `blocking` workers (one WorkerPool, settle off) driven by
   `accept_order.driver.drive` versus a C client doing the same connect / read-to-EOF / close loop
   (benchmarks/c/seq_client.c) against the same workers, alternated to spread the machine's drift over
   both. Target: driver rate >= 0.6 x C rate.
3. Instrumentation cost (optional, --instrumentation): the C client against bare forked blocking-accept
   workers that count in memory, write a pipe per connection, or put on a multiprocessing.Queue per
   connection; shows why workers report once at the end.

Run: .venv/bin/python benchmarks/bench_run.py [--connections 20000] [--rounds 3] [--repeat 7]
"""

from __future__ import annotations

import argparse
import ctypes
import multiprocessing as mp
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cbuild import NoCompiler, build  # noqa: E402

from accept_order import WorkerPool, make_plan  # noqa: E402
from accept_order.driver import drive  # noqa: E402

RUN_TARGET_S = 1.0
RATIO_TARGET = 0.6
C_SOURCE = HERE / "c" / "seq_client.c"


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def verdict(ok: bool) -> str:
    return "OK" if ok else "MISS"


def machine_line() -> str:
    return (
        f"machine: Linux {platform.release()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}"
    )


def c_client() -> Path | None:
    """The compiled reference client, or None (after saying why) if there is no C compiler."""
    try:
        return build(C_SOURCE, ("-O2", "-Wall"))
    except NoCompiler as exc:
        print(f"C reference: skipped ({exc})")
    except subprocess.CalledProcessError as exc:
        print(f"C reference: skipped (cc failed with exit {exc.returncode})")
    return None


# -- 1: `accept-order run` end to end -------------------------------------------------------------
def console_command() -> list[str]:
    """The installed console script next to this interpreter (the venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name("accept-order")
    found = str(beside) if beside.exists() else shutil.which("accept-order")
    if found is None:
        raise SystemExit("bench_run: no accept-order console script; install the package (pip install -e .)")
    return [found]


def wall_times(argv: list[str], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return times


def bench_run_command(repeat: int) -> None:
    print(f"== 1. accept-order run --mode epoll, end to end ({repeat} repetitions)")
    floor = wall_times([sys.executable, "-c", "pass"], repeat)
    run = wall_times([*console_command(), "run", "--mode", "epoll"], repeat)
    print(f"python -c pass         : median {statistics.median(floor):.3f} s, min {min(floor):.3f} s")
    median = statistics.median(run)
    print(
        f"accept-order run epoll : median {median:.3f} s, min {min(run):.3f} s, max {max(run):.3f} s "
        f"(target < {RUN_TARGET_S:g} s: {verdict(median < RUN_TARGET_S)})"
    )


# -- 2: connection rate, driver vs C ----------------------------------------------------------------
def run_c(binary: Path, address: tuple[str, int], count: int) -> tuple[float, int]:
    """(rate, failures) of the C client; its one output line is `count N failures F elapsed_s S rate R`."""
    argv = [str(binary), address[0], str(address[1]), str(count)]
    # Each connection has a 5 s limit in the client; this only guards against a wedged machine.
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60 + count * 0.05)
    fields = out.stdout.split()
    if out.returncode not in (0, 1) or len(fields) != 8:
        raise SystemExit(f"bench_run: C client failed (exit {out.returncode}): {out.stderr.strip()}")
    return float(fields[7]), int(fields[3])


def run_driver(pool: WorkerPool, count: int) -> tuple[float, int, list[int]]:
    """(rate, failures, served per worker) of the real driver, called as `api.run_plan` calls it."""
    started = time.perf_counter()
    records = drive(pool.address, count, gap_s=0.0, timeout_s=5.0, before_each=pool.between_connections)
    elapsed = time.perf_counter() - started
    assert len(records) == count, "the driver must account for every connection"
    per = [0] * pool.plan.workers
    for r in records:
        if r.served and r.worker is not None:
            per[r.worker] += 1
    return count / elapsed, count - sum(per), per


def bench_rate(connections: int, rounds: int, workers: int) -> None:
    print(f"== 2. {connections} sequential connections at {workers} blocking workers, {rounds} rounds")
    binary = c_client()
    plan = make_plan(mode="blocking", workers=workers, connections=connections, settle=False)
    py_rates: list[float] = []
    c_rates: list[float] = []
    with WorkerPool(plan) as pool:
        warm = min(connections, 500)  # page in both clients and the workers' code paths
        run_driver(pool, warm)
        if binary:
            run_c(binary, pool.address, warm)
        for index in range(rounds):
            # Alternate which goes first, so a drift in machine load does not favour one side.
            order = ("py", "c") if index % 2 == 0 else ("c", "py")
            for side in order:
                if side == "py":
                    rate, failed, per = run_driver(pool, connections)
                    py_rates.append(rate)
                    print(f"round {index + 1} driver  : {rate:6.0f} conn/s, failed {failed}, served {per}")
                elif binary:
                    rate, failed = run_c(binary, pool.address, connections)
                    c_rates.append(rate)
                    print(f"round {index + 1} C client: {rate:6.0f} conn/s, failed {failed}")
        pool.check_alive()
    py = statistics.median(py_rates)
    if not c_rates:
        print(f"driver median {py:.0f} conn/s; ratio driver/C: n/a (no C reference)")
        return
    c = statistics.median(c_rates)
    # Each round's two runs were back to back, so their ratio shares the machine's state of the moment;
    # the median over rounds is the figure, the spread shows how noisy the machine was.
    per_round = [p / q for p, q in zip(py_rates, c_rates, strict=True)]
    ratio = statistics.median(per_round)
    print(
        f"median driver {py:.0f} conn/s, C {c:.0f} conn/s; ratio driver/C: {ratio:.2f} "
        f"(per round {', '.join(f'{r:.2f}' for r in per_round)}; target >= {RATIO_TARGET:g}: "
        f"{verdict(ratio >= RATIO_TARGET)})"
    )


# -- 3: instrumentation cost -----------------------------------------------------------------------
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


def _instrumented(kind: str, binary: Path, connections: int, workers: int) -> float:
    ctx = mp.get_context("fork")
    sock = socket.create_server(("127.0.0.1", 0), backlog=511)
    procs: list[Any] = []
    drain: Any = None
    queue: Any = None
    try:
        if kind == "memory":
            counted = [0]

            def report(n: int) -> None:
                counted[0] += n

        elif kind == "pipe":
            read_fd, write_fd = os.pipe()

            def report(n: int) -> None:
                os.write(write_fd, b"1 0\n")

            drain = ctx.Process(target=_drain, args=(read_fd, write_fd))
        else:
            queue = ctx.Queue()

            def report(n: int) -> None:
                queue.put((0, n))

            drain = ctx.Process(target=_drain_queue, args=(queue,))
        if drain is not None:
            drain.start()
        for _ in range(workers):
            p = ctx.Process(target=_bare_worker, args=(sock, report))
            p.start()
            procs.append(p)
        if kind == "pipe":
            os.close(write_fd)  # the workers hold it; the reader sees EOF when they are gone
        rate, failed = run_c(binary, sock.getsockname(), connections)
        if failed:
            print(f"  ({kind}: {failed} failed)")
        return rate
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(3)
        if queue is not None:
            queue.put(None)
            queue.close()
            queue.join_thread()
        if drain is not None:
            drain.join(3)
            if drain.exitcode is None:
                drain.kill()
                drain.join()
        if kind == "pipe":
            os.close(read_fd)
        sock.close()


def _drain_queue(queue: Any) -> None:
    _die_with_parent()
    while queue.get() is not None:
        pass


def bench_instrumentation(connections: int, rounds: int, workers: int) -> None:
    print(f"== 3. instrumentation cost: C client, {connections} connections, bare blocking workers")
    binary = c_client()
    if binary is None:
        return
    rates: dict[str, list[float]] = {"memory": [], "pipe": [], "queue": []}
    for _ in range(rounds):
        for kind in rates:
            rates[kind].append(_instrumented(kind, binary, connections, workers))
    base = statistics.median(rates["memory"])
    for kind, values in rates.items():
        rate = statistics.median(values)
        print(f"{kind:7}: {rate:8.0f} conn/s, {100 * (1 - rate / base):5.1f}% slower than counting in memory")


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="bench_run.py", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--connections", type=int, default=20_000, help="connections per measurement")
    parser.add_argument("--rounds", type=int, default=3, help="driver/C alternations")
    parser.add_argument("--repeat", type=int, default=7, help="repetitions of `accept-order run`")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--only", choices=("run", "rate", "instrumentation"), help="one part only")
    parser.add_argument("--instrumentation", action="store_true", help="also measure part 3")
    args = parser.parse_args(argv)
    for name in ("connections", "rounds", "repeat", "workers"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    print(machine_line())
    if args.only in (None, "run"):
        bench_run_command(args.repeat)
    if args.only in (None, "rate"):
        bench_rate(args.connections, args.rounds, args.workers)
    if args.only == "instrumentation" or (args.only is None and args.instrumentation):
        bench_instrumentation(args.connections, args.rounds, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
