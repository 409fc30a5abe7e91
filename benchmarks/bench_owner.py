"""Speed of SocketOwners.owner() (issue 8: at most 2 ms per connection with 8 workers).

8 forked workers accept on one shared listening socket (blocking accept), greet each connection with one
byte and hold it until the client closes. The client connects N times in sequence; once the greeting has
arrived (the socket is in a worker's fd table) it times owner() for that connection, then closes. At the
end each worker reports the client ports it accepted over its own pipe, and every attribution is checked
against those reports.

Run: .venv/bin/python benchmarks/bench_owner.py [--connections 500] [--workers 8] [--host 127.0.0.1|::1]
     [--proc]   (--proc: measure the /proc/net/tcp fallback instead of netlink)
"""

from __future__ import annotations

import ctypes
import os
import platform
import select
import signal
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))  # the shared parser
from _cli import OneLineParser  # noqa: E402  (experiments/_cli.py)

from accept_order.probes import owner as owner_mod  # noqa: E402
from accept_order.probes.owner import SocketOwners  # noqa: E402

TARGET_MS = 2.0  # issue 8
TIMEOUT_S = 10.0


def _serve(listener: socket.socket, report_fd: int) -> None:
    """Blocking accept; greet each connection with b"+" and hold it until the client closes it. On SIGTERM
    write the client ports accepted to `report_fd` and exit."""
    ports: list[int] = []

    def report_on_sigterm() -> None:
        signal.sigwait({signal.SIGTERM})
        # The parent sends SIGTERM only once every connection has been greeted, so `ports` is complete.
        os.write(report_fd, ("ports " + " ".join(map(str, ports)) + "\n").encode())
        os._exit(0)

    # Not a Python SIGTERM handler: one that lands between the interpreter's last signal check and the
    # accept() syscall is only run when accept returns, i.e. never. Blocked, SIGTERM goes to sigwait.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a ^C is the parent's to handle; it ends us
    threading.Thread(target=report_on_sigterm, daemon=True).start()
    os.write(report_fd, b"ready\n")  # from now on a SIGTERM yields a report
    while True:
        conn, peer = listener.accept()
        ports.append(peer[1])
        with conn:
            try:
                conn.sendall(b"+")  # tells the client the socket is in our fd table now
                while conn.recv(64):
                    pass  # hold the connection until the client closes it
            except OSError:
                pass


class Workers:
    """Forked workers on one listening socket, each with its own report pipe (EOF = it has exited)."""

    def __init__(self, host: str) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.listener = socket.create_server((host, 0), family=family, backlog=511)
        self.address: tuple[str, int] = self.listener.getsockname()[:2]
        self.pids: list[int] = []
        self.reads: list[int] = []
        self.data: list[bytes] = []
        self.ended = False

    def start(self, count: int) -> None:
        for _ in range(count):
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child never returns into the benchmark
                code = 1
                try:
                    try:
                        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: no orphan if we die
                    except (OSError, AttributeError):
                        pass
                    for fd in (*self.reads, read_fd):
                        os.close(fd)
                    _serve(self.listener, write_fd)
                    code = 0
                finally:
                    os._exit(code)
            os.close(write_fd)
            self.pids.append(pid)
            self.reads.append(read_fd)
            self.data.append(b"")
        for i in range(count):
            if not self.read(i, lambda data: b"ready\n" in data):
                raise RuntimeError(f"worker pid {self.pids[i]} did not start within {TIMEOUT_S:g} s")

    def read(self, i: int, done: Callable[[bytes], bool] | None) -> bool:
        """Read worker i's pipe until done(data) (or EOF when done is None); False on timeout."""
        deadline = time.monotonic() + TIMEOUT_S
        while done is None or not done(self.data[i]):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.reads[i]], [], [], remaining)[0]:
                return False
            chunk = os.read(self.reads[i], 65536)
            if not chunk:
                return done is None
            self.data[i] += chunk
        return True

    def stop(self) -> list[list[int] | None]:
        """SIGTERM all, collect each report (None if a worker did not give one), end them all."""
        reports: list[list[int] | None] = []
        try:
            for pid in self.pids:
                os.kill(pid, signal.SIGTERM)
            for i in range(len(self.pids)):
                lines = self.data[i].decode().splitlines() if self.read(i, None) else []
                line = next((ln for ln in lines if ln.startswith("ports")), None)
                reports.append(None if line is None else [int(p) for p in line.split()[1:]])
        finally:
            self.end()
        return reports

    def end(self) -> None:
        """Every worker ended and reaped (killed if it does not exit in time); idempotent."""
        if self.ended:
            return
        self.ended = True
        for pid in self.pids:
            try:
                pidfd = os.pidfd_open(pid)
            except ProcessLookupError:
                pidfd = -1
            if pidfd >= 0:
                try:
                    if not select.select([pidfd], [], [], TIMEOUT_S)[0]:
                        os.kill(pid, signal.SIGKILL)
                finally:
                    os.close(pidfd)
            os.waitpid(pid, 0)
        for fd in self.reads:
            os.close(fd)
        self.listener.close()


Run = tuple[list[float], list[tuple[int, int | None]], list[list[int] | None]]


def run(connections: int, count: int, host: str) -> Run:
    """Per connection, in order, owner()'s time in ms and (client port, owner()); and the workers' reports."""
    times: list[float] = []
    seen: list[tuple[int, int | None]] = []
    workers = Workers(host)
    try:
        workers.start(count)
        with SocketOwners(workers.pids) as owners:
            for _ in range(connections):
                with socket.create_connection(workers.address, timeout=TIMEOUT_S) as client:
                    if client.recv(1) != b"+":
                        raise RuntimeError("a worker closed a connection without its greeting")
                    local, peer = client.getsockname(), client.getpeername()
                    start = time.perf_counter_ns()
                    index = owners.owner(local, peer)
                    times.append((time.perf_counter_ns() - start) / 1e6)
                    seen.append((local[1], index))
        reports = workers.stop()
    finally:
        if not workers.ended:  # an error or ^C before stop(): end them without reports
            for pid in workers.pids:
                os.kill(pid, signal.SIGKILL)
            workers.end()
    return times, seen, reports


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--proc", action="store_true", help="measure the /proc/net/tcp fallback")
    args = parser.parse_args(argv)
    if args.connections < 1 or args.workers < 1:
        parser.error("--connections and --workers must be at least 1")
    if args.proc:

        def no_netlink() -> socket.socket:
            raise OSError("netlink disabled by --proc")

        owner_mod._open_netlink = no_netlink  # what SocketOwners does where netlink is refused
    # A SIGTERM becomes SystemExit, so that run()'s finally ends the workers (they also die with us).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    load_before = os.getloadavg()[0]
    print(
        f"machine: Linux {platform.release()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {load_before:.2f}"
    )
    times, seen, reports = run(args.connections, args.workers, args.host)
    load_after = os.getloadavg()[0]
    source = "/proc/net/tcp fallback" if args.proc else "netlink"
    median, p99, worst = statistics.median(times), percentile(times, 0.99), max(times)
    print(f"owner() via {source}, {args.workers} workers, {len(times)} sequential connections to {args.host}:")
    print(f"  per connection: median {median:.3f} ms, p99 {p99:.3f} ms, max {worst:.3f} ms, first {times[0]:.3f} ms")
    print(f"  target (issue 8): <= {TARGET_MS:g} ms per connection: {'OK' if p99 <= TARGET_MS else 'MISS'} (p99)")
    # Client ports repeat in a long run (tcp_tw_reuse), so compare in order: each worker's report lists the
    # ports it accepted in accept order, which must be the order the connections attributed to it came in.
    missing = [i for i, ports in enumerate(reports) if ports is None]
    accepted = [ports or [] for ports in reports]
    taken = [0] * len(accepted)
    agree = 0
    for port, index in seen:
        if index is not None and taken[index] < len(accepted[index]) and accepted[index][taken[index]] == port:
            agree += 1
            taken[index] += 1
    whole = agree == len(seen) and not missing and taken == [len(ports) for ports in accepted]
    print(
        f"  check against the workers' reports: {agree}/{len(seen)} attributed to the worker that accepted them "
        f"({'exact' if whole else 'MISMATCH'}); {sum(1 for _, i in seen if i is None)} None; "
        f"accepted per worker {[len(ports) for ports in accepted]}"
        + (f"; no report from worker(s) {missing}" if missing else "")
    )
    print(f"load average at the end {load_after:.2f}")
    return 0 if whole else 1


if __name__ == "__main__":
    sys.exit(main())
