"""What `accept-order observe` costs the server it watches: nginx serving wrk, with and without observe
running, in paired rounds of one run (issue 17: throughput with observe >= 0.98 of without).

One nginx (2 workers, its default epoll mode, no work) is started by the tool and serves every round. Each
round runs `wrk -t 2 -c C -d D -H 'Connection: close'` (one connection per request, so every request is an
accept that observe counts) twice: once alone, once while `accept-order observe --port P` watches (started
before wrk, once its probes are attached, and stopped with Ctrl-C after wrk ends), the order flipping every
round so that the machine's drift falls on both. Printed: each round's two rates and their ratio, how many
connections observe counted against the requests wrk made, then the median of the per-round ratios against
the 0.98 target, with the load average before and after. Without root or bpftrace, observe samples /proc
instead: the figure is then that mode's cost, and the script says so.

Run: .venv/bin/python benchmarks/bench_observe_overhead.py [--rounds 7] [--duration 5] [--concurrency 50]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_nginx_load's wrk round
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))  # the one-line parser

from _cli import OneLineParser, positive_int  # noqa: E402  (experiments/_cli.py)
from bench_nginx_load import nginx_and_wrk_missing, print_machine, seconds, terminated, wrk_round  # noqa: E402

from accept_order.core.errors import ServerUnavailable  # noqa: E402
from accept_order.core.signals import Terminated  # noqa: E402
from accept_order.core.spec import ServerSpec  # noqa: E402
from accept_order.servers.launched.nginx import NginxServer  # noqa: E402

TARGET = 0.98  # issue 17: observe must not disturb production
PROG = "bench_observe_overhead.py"
ATTACH_TIMEOUT_S = 30.0


class Observing:
    """`accept-order observe --port PORT` as a child for one round: started, waited for until its first
    line (the probes are attached), stopped with SIGINT; its saved result read back."""

    def __init__(self, port: int, directory: str) -> None:
        self.path = os.path.join(directory, "observe.json")
        cmd = [sys.executable, "-m", "accept_order", "observe", "--port", str(port), "--duration", "1h"]
        self.proc = subprocess.Popen(
            [*cmd, "--json", self.path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )

    def __enter__(self) -> Observing:
        assert self.proc.stderr is not None
        ready = select.select([self.proc.stderr], [], [], ATTACH_TIMEOUT_S)[0]
        line = self.proc.stderr.readline() if ready else ""  # "observing nginx, ..." once attached
        if not line.startswith("observing"):
            self.close()
            raise SystemExit(f"{PROG}: error: observe did not start: {line.strip()!r}")
        return self

    def cpu_s(self) -> float:
        """CPU seconds observe and its bpftrace have used so far (user and system). The eBPF program's own
        cost runs in the server's workers, on their CPU: that is in the throughput ratio, not here."""
        total = 0.0
        try:
            observer = psutil.Process(self.proc.pid)
            for proc in [observer, *observer.children(recursive=True)]:
                times = proc.cpu_times()
                total += times.user + times.system
        except psutil.Error:
            pass
        return total

    def stop(self) -> dict[str, object]:
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=ATTACH_TIMEOUT_S)
        if self.proc.returncode != 130:
            raise SystemExit(f"{PROG}: error: observe exited {self.proc.returncode}: {err.strip()[-200:]!r}")
        with open(self.path) as f:
            return dict(json.load(f))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def __exit__(self, *exc: object) -> None:
        self.close()


def workers_cpu(pids: list[int]) -> float:
    """CPU seconds the server's workers have used so far (the eBPF program runs in them, on each accept)."""
    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system
    return total


def timed_round(url: str, pids: list[int], args: argparse.Namespace) -> tuple[float, float]:
    """(wrk's requests per second, the workers' CPU µs per request) of one measurement."""
    before = workers_cpu(pids)
    rate = wrk_round(url, args.concurrency, args.duration)[0]
    requests = rate * args.duration
    return rate, (workers_cpu(pids) - before) * 1e6 / requests if requests else 0.0


def measure(args: argparse.Namespace) -> list[float]:
    """Start nginx, run the paired rounds, print one line per round; nginx and observe stop on every path."""
    spec = ServerSpec(kind="nginx", mode="epoll", workers=2, accept_batch=1).validated()
    ratios: list[float] = []
    cpu_ratios: list[float] = []  # the workers' CPU per request, observed over alone
    with NginxServer(spec) as server, tempfile.TemporaryDirectory() as directory:
        host, port = server.address
        url = f"http://{host}:{port}/"
        print(
            f"server: nginx, 2 workers, epoll (multi_accept off), no work, on {host}:{port}; wrk -t 2 -c "
            f"{args.concurrency} -H 'Connection: close', {args.duration:g} s per measurement"
        )
        wrk_round(url, args.concurrency, min(1.0, args.duration))  # warm up (not counted)
        print(
            f"{'round':>5}  {'first':>7}  {'alone req/s':>11}  {'observed req/s':>14}  ratio  workers' µs/req "
            "alone, observed; observe counted; its own CPU"
        )
        source = ""
        for number in range(1, args.rounds + 1):
            observed_first = number % 2 == 0
            if not observed_first:
                alone, alone_us = timed_round(url, server.pids, args)
            with Observing(port, directory) as observing:
                began, cpu_before = time.monotonic(), observing.cpu_s()
                watched, watched_us = timed_round(url, server.pids, args)
                cpu = (observing.cpu_s() - cpu_before) / (time.monotonic() - began)
                result = observing.stop()
            if observed_first:
                alone, alone_us = timed_round(url, server.pids, args)
            workers = result["workers"]
            assert isinstance(workers, list)
            counted = sum((w.get("accepts") if result["traced"] else w.get("seen")) or 0 for w in workers)
            source = str(result["source"])
            ratio = watched / alone if alone > 0 else 0.0
            ratios.append(ratio)
            cpu_ratios.append(watched_us / alone_us if alone_us > 0 else 0.0)
            print(
                f"{number:>5}  {'observe' if observed_first else 'alone':>7}  {alone:>11.0f}  {watched:>14.0f}  "
                f"{ratio:>5.3f}  {alone_us:6.1f} {watched_us:6.1f}  {counted:,} in {result['wall_s']} s "
                f"(wrk ~{watched * args.duration:,.0f}); {cpu:.1%}"
            )
        print(f"observe counted: {source}")
        print(
            f"the workers' CPU per request, observed / alone: median {statistics.median(cpu_ratios):.3f} (min "
            f"{min(cpu_ratios):.3f}, max {max(cpu_ratios):.3f}): the eBPF program runs in them, on each accept"
        )
        server.check_alive()
    return ratios


def main() -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=positive_int, default=7)
    parser.add_argument("--duration", type=seconds, default=5.0, help="seconds per measurement (default 5)")
    parser.add_argument("--concurrency", type=positive_int, default=50, help="connections in flight (default 50)")
    args = parser.parse_args()
    missing = nginx_and_wrk_missing()
    if missing:
        print(f"{missing}: observed / alone: median n/a")
        return 0
    signal.signal(signal.SIGTERM, terminated)  # like Ctrl-C: every `with` and `finally` ends its processes
    load_before = print_machine()
    try:
        ratios = measure(args)
    except ServerUnavailable as exc:
        print(f"{exc}: observed / alone: median n/a")
        return 0
    except KeyboardInterrupt as exc:
        print(f"{PROG}: interrupted; nginx, wrk and observe stopped", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    median = statistics.median(ratios)
    verdict = "OK" if median >= TARGET else "MISS"
    print(
        f"observed / alone: median {median:.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}) over {len(ratios)} "
        f"rounds; target >= {TARGET}: {verdict}; load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
