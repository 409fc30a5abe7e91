"""Speed of the harness, each figure next to a reference measured in the same run.

1. `accept-order run --mode epoll` end to end (start, 6 connections, report, teardown), wall time over
   several repetitions, its median against the 0.15 s target (issue 30), with `python -c pass` as the
   interpreter's floor; beside it the start-up of `--help`, `show FILE` (a run's file) and `inspect --port P`
   (3 built-in workers), which every test that starts the command line as a process pays. Each repetition
   times all five in turn, so that the machine's drifting load falls on each alike.
2. Connection rate: 20,000 sequential connections at 3 `blocking` workers (one WorkerPool, settle off)
   driven by `accept_order.loads.sequential.run_sequential` (the pool as its Target, as `run` drives it)
   versus a C client doing the same connect / read-to-EOF / close loop (benchmarks/c/seq_client.c)
   against the same workers. Each client's 20,000 are split into short rounds that alternate with the
   other's, so that the machine's drifting load falls on both. Target: driver rate >= 0.9 x C rate
   (issue 30). Each client's CPU per connection is printed too: the driver's from this process's CPU
   time around its rounds, C's from its rusage (the kernel's share of a loopback connection, the
   handshake and the teardown, is charged to the client that connects and closes).
3. Instrumentation cost (optional, --instrumentation): the C client against bare forked blocking-accept
   workers that count in memory, write a pipe per connection, or put on a multiprocessing.Queue per
   connection; shows why workers report once at the end.

Run: .venv/bin/python benchmarks/bench_run.py [--connections 20000] [--rounds 10] [--repeat 7]
     [--instrumentation] [--only run|rate|instrumentation]
"""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import platform
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "experiments"))  # the one-line parser the experiments use

import psutil  # noqa: E402
from _cli import OneLineParser, positive_int  # noqa: E402  (experiments/_cli.py)
from cbuild import NoCompiler, build  # noqa: E402

from accept_order.core.spec import SequentialLoad, ServerSpec  # noqa: E402
from accept_order.loads.sequential import loop_for, run_sequential  # noqa: E402
from accept_order.servers.pool import WorkerPool  # noqa: E402

RUN_TARGET_S = 0.15  # issue 30 (0.2 in issue 7): `run --mode epoll` end to end, median
RATIO_TARGET = 0.9  # issue 30 (0.8 in issue 7): the sequential client against the C one, median of paired rounds
C_SOURCE = HERE / "c" / "seq_client.c"


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


RUN = "accept-order run epoll"


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds from start to exit, CPU seconds of the command and every process it waited for) of one
    command (which must succeed), its output discarded. On a busy machine the wall time is mostly waiting
    for a CPU; the CPU time is what the command itself cost."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as an ordinary install runs
    cpu = children_cpu_s()
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - started, children_cpu_s() - cpu


def bench_run_command(repeat: int) -> None:
    print(f"== 1. accept-order run --mode epoll, end to end, and the command line's start-up ({repeat} repetitions)")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("(PYTHONDONTWRITEBYTECODE is set here: the commands run without it, as an ordinary install does)")
    command = console_command()
    with TemporaryDirectory(prefix="bench-run-") as directory, WorkerPool(ServerSpec(mode="epoll")) as pool:
        result = str(Path(directory) / "run.json")
        timed([*command, "run", "--mode", "epoll", "--json", result])  # the file show reads; warms the caches
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            RUN: [*command, "run", "--mode", "epoll"],
            "accept-order --help": [*command, "--help"],
            "accept-order show FILE": [*command, "show", result],
            "accept-order inspect --port P": [*command, "inspect", "--port", str(pool.address[1])],
        }
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(repeat):
            for name, argv in commands.items():
                times[name].append(timed(argv))
    for name, pairs in times.items():
        seconds, cpu = [wall for wall, _ in pairs], [used for _, used in pairs]
        median = statistics.median(seconds)
        target = f" (target <= {RUN_TARGET_S:g} s: {verdict(median <= RUN_TARGET_S)})" if name == RUN else ""
        print(
            f"{name} : median {median:.3f} s, min {min(seconds):.3f} s, max {max(seconds):.3f} s, "
            f"CPU median {statistics.median(cpu):.3f} s{target}"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")


# -- 2: connection rate, driver vs C ----------------------------------------------------------------
def children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's waited-for children so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def own_cpu_s() -> float:
    """CPU seconds (user + system) of this process so far (the pool's workers are other processes)."""
    return time.process_time()


def run_c(binary: Path, address: tuple[str, int], count: int) -> tuple[float, int]:
    """(seconds, failures) of the C client; its one output line is `count N failures F elapsed_s S rate R`."""
    argv = [str(binary), address[0], str(address[1]), str(count)]
    # Each connection has a 5 s limit in the client; this only guards against a wedged machine.
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60 + count * 0.05)
    fields = out.stdout.split()
    if out.returncode not in (0, 1) or len(fields) != 8:
        raise SystemExit(f"bench_run: C client failed (exit {out.returncode}): {out.stderr.strip()}")
    return float(fields[5]), int(fields[3])


def run_driver(pool: WorkerPool, count: int, served: list[int]) -> tuple[float, int, float]:
    """(seconds, failures, CPU seconds) of the real sequential client, driving the pool as a run drives its
    target (gap 0, 5 s timeout, settle off: the pool's pidfds watch the workers); adds to `served`."""
    load = SequentialLoad(connections=count, gap_ms=0.0, timeout_s=5.0, settle=False).validated()
    cpu = own_cpu_s()
    started = time.perf_counter()
    records = run_sequential(pool, load)
    elapsed = time.perf_counter() - started
    cpu = own_cpu_s() - cpu
    assert len(records) == count, "the driver must account for every connection"
    ok = 0
    for r in records:
        if r.served and r.worker is not None:
            served[r.worker] += 1
            ok += 1
    return elapsed, count - ok, cpu


def chunks(total: int, rounds: int) -> list[int]:
    """`total` split into `rounds` near-equal positive parts."""
    rounds = min(rounds, total)
    return [total // rounds + (1 if i < total % rounds else 0) for i in range(rounds)]


def bench_rate(connections: int, rounds: int, workers: int) -> None:
    parts = chunks(connections, rounds)
    print(
        f"== 2. {connections} sequential connections at {workers} blocking workers per client, "
        f"in {len(parts)} alternating rounds of ~{parts[0]}"
    )
    binary = c_client()
    spec = ServerSpec(mode="blocking", workers=workers).validated()
    py_s: list[float] = []
    c_s: list[float] = []
    py_failed = c_failed = 0
    py_cpu = c_cpu = 0.0  # CPU seconds over the measured rounds
    served = [0] * workers
    with WorkerPool(spec) as pool:
        warm = min(connections, 500)  # page in both clients and the workers' code paths
        run_driver(pool, warm, [0] * workers)
        if binary:
            run_c(binary, pool.address, warm)
        for index, count in enumerate(parts):
            # Short rounds, alternating which client goes first: the machine's load drifts, and each
            # round's pair then shares the same moment.
            for side in ("py", "c") if index % 2 == 0 else ("c", "py"):
                if side == "py":
                    elapsed, failed, cpu = run_driver(pool, count, served)
                    py_s.append(elapsed)
                    py_failed += failed
                    py_cpu += cpu
                elif binary:
                    cpu = children_cpu_s()
                    elapsed, failed = run_c(binary, pool.address, count)
                    c_cpu += children_cpu_s() - cpu
                    c_s.append(elapsed)
                    c_failed += failed
            line = f"round {index + 1:2}: driver {count / py_s[-1]:6.0f} conn/s"
            if binary:
                line += f", C {count / c_s[-1]:6.0f} conn/s, ratio {c_s[-1] / py_s[-1]:.2f}"
            print(line)
        pool.check_alive()
    py = connections / sum(py_s)
    print(f"driver loop: {loop_for('auto')} (--driver auto; a sequential load refuses io_uring)")
    print(
        f"driver  : {py:6.0f} conn/s over {connections}, failed {py_failed}, served per worker {served}, "
        f"CPU {1e6 * py_cpu / connections:.1f} us/conn"
    )
    if not binary:
        print("ratio driver/C: n/a (no C reference)")
        return
    c = connections / sum(c_s)
    print(
        f"C client: {c:6.0f} conn/s over {connections}, failed {c_failed}, CPU {1e6 * c_cpu / connections:.1f} us/conn"
    )
    # The median of the paired rounds is the figure: a burst of load from elsewhere on the machine
    # spoils a round or two, not the result; the overall ratio is shown beside it.
    per_round = sorted(q / p for p, q in zip(py_s, c_s, strict=True))
    ratio = statistics.median(per_round)
    # Load from elsewhere only ever slows a round down, so each client's fastest round is its speed
    # on a quiet machine: a second, noise-resistant view of the same ratio.
    best_py = max(n / t for n, t in zip(parts, py_s, strict=True))
    best_c = max(n / t for n, t in zip(parts, c_s, strict=True))
    print(f"fastest rounds: driver {best_py:.0f} conn/s, C {best_c:.0f} conn/s, ratio {best_py / best_c:.2f}")
    print(
        f"ratio driver/C: {ratio:.2f} (median of rounds; range {per_round[0]:.2f}-{per_round[-1]:.2f}, "
        f"overall {py / c:.2f}; target >= {RATIO_TARGET:g}: {verdict(ratio >= RATIO_TARGET)})"
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


def _drain_queue(queue: Any) -> None:
    _die_with_parent()
    while queue.get() is not None:
        pass


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
            queue.put(None)
            queue.close()
            queue.join_thread()
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


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="bench_run.py", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--connections", type=positive_int, default=20_000, help="connections per client")
    parser.add_argument("--rounds", type=positive_int, default=10, help="alternating rounds they are split into")
    parser.add_argument("--repeat", type=positive_int, default=7, help="repetitions of `accept-order run`")
    parser.add_argument("--workers", type=positive_int, default=3)
    parser.add_argument("--only", choices=("run", "rate", "instrumentation"), help="one part only")
    parser.add_argument("--instrumentation", action="store_true", help="also measure part 3")
    args = parser.parse_args(argv)
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
