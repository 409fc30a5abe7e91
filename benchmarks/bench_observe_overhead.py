"""What `accept-order observe` costs the server it watches: nginx serving wrk, with and without observe
running, in paired rounds of one run (issue 17: throughput with observe >= 0.98 of without; issue 28 §1:
the same at 10,000 open connections, now that observe reads each worker's held connections and bytes).

One nginx (2 workers, its default epoll mode, no work) is started by the tool and serves every round. Each
round runs `wrk -t 2 -c C -d D -H 'Connection: close'` (one connection per request, so every request is an
accept that observe counts; with --keepalive no such header: wrk's requests go over its C kept connections)
twice: once alone, once while `accept-order observe --port P` watches (started before wrk, once its probes
are attached, and stopped with Ctrl-C after wrk ends), the order flipping every round so that the machine's
drift falls on both. --open N: a helper process of the benchmark's own (held_connections.py) holds N idle
keep-alive connections to nginx for the whole run, each after one answered request, so that observe's load
sampling (one inet_diag dump of every connection and the workers' fd tables) has N sockets to read; the
config gives each worker room for N + C connections and keeps idle ones for 24 h, and ss counts N
established before the rounds (and again after). Printed: each round's two rates and their ratio, the
workers' CPU per request, observe's own CPU, the pace of its load sampling (its saved result's
load_every_s), its samples and the sockets they held, and how many connections it counted; then the median
of the per-round ratios against the 0.98 target, with the machine and its load average. Without root or
bpftrace, observe samples /proc instead: the figure is then that mode's cost, and the script says so.

Run: .venv/bin/python benchmarks/bench_observe_overhead.py [--rounds 7] [--duration 5] [--concurrency 50]
[--open 10000] [--keepalive]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_nginx_load's wrk round
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))  # the one-line parser

from _cli import OneLineParser, positive_int  # noqa: E402  (experiments/_cli.py)
from bench_nginx_load import nginx_and_wrk_missing, print_machine, seconds, terminated, wrk_round  # noqa: E402
from held_connections import Held  # noqa: E402

from accept_order.core.errors import ServerUnavailable  # noqa: E402
from accept_order.core.signals import Terminated  # noqa: E402
from accept_order.core.spec import ServerSpec  # noqa: E402
from accept_order.servers.launched.nginx import NginxServer  # noqa: E402

TARGET = 0.98  # issue 17: observe must not disturb production
PROG = "bench_observe_overhead.py"
ATTACH_TIMEOUT_S = 30.0
MAX_OPEN = 19_000  # the hard open-file limit here is 20,000 per process; the holder keeps a few for itself
SETTLE_STEP_S = 0.5  # observe's start-up is over after a step of this long ...
SETTLED_SHARE = 0.05  # ... in which it used less than this share of one CPU
SETTLE_TIMEOUT_S = 60.0


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

    def settle(self) -> tuple[float, float]:
        """Wait for observe's start-up to end: (CPU seconds it used from its launch, seconds waited here).
        As it starts watching it asks inspect, in a thread, how the server hands out connections, and that
        reads every worker's fd table a few times: seconds of CPU with 10,000 connections open, once per
        observation. The rounds measure what watching costs from then on; the start-up is printed apart."""
        began = time.monotonic()
        last = self.cpu_s()
        while time.monotonic() - began < SETTLE_TIMEOUT_S:
            time.sleep(SETTLE_STEP_S)  # a CPU reading per step: nothing here to wait on instead
            now = self.cpu_s()
            if now - last < SETTLED_SHARE * SETTLE_STEP_S:
                break
            last = now
        return self.cpu_s(), time.monotonic() - began

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

    def stop(self) -> dict[str, Any]:
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
    rate = wrk_round(url, args.concurrency, args.duration, close=not args.keepalive)[0]
    requests = rate * args.duration
    return rate, (workers_cpu(pids) - before) * 1e6 / requests if requests else 0.0


def established(port: int) -> int:
    """The server-side TCP connections on `port` that are established, counted by ss (iproute2): the
    witness that the server holds what the helper opened, apart from the tool's own inet_diag decoder."""
    out = subprocess.run(
        ["ss", "-Htn", "state", "established", "(", "sport", "=", f":{port}", ")"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return sum(1 for line in out.splitlines() if line.strip())


def config_line(directory: str) -> str:
    """What the config the tool wrote gives a connection: worker_connections and the keep-alive timeout."""
    with open(os.path.join(directory, "nginx.conf")) as f:
        text = f.read()
    found = [m.group(0).rstrip(";") for m in re.finditer(r"(worker_connections|keepalive_timeout) [^;]+;", text)]
    return ", ".join(found) or "neither worker_connections nor keepalive_timeout set"


def sampled(result: dict[str, Any]) -> tuple[float | None, int, int]:
    """(the pace of observe's load sampling, its samples, the connections its dumps held at most summed over
    the workers) from a saved observe result."""
    workers = result["workers"]
    held = sum(w.get("connections_held_peak") or 0 for w in workers)
    return result.get("load_every_s"), int(result.get("load_samples") or 0), held


def holding(host: str, port: int, count: int) -> AbstractContextManager[object]:
    """The helper process that holds `count` idle keep-alive connections (none: nothing)."""
    return Held(host, port, count) if count else nullcontext()


def measure(args: argparse.Namespace) -> tuple[list[float], list[float]]:
    """Start nginx, hold --open connections, run the paired rounds, print one line per round: the ratios and
    observe's sampling paces. nginx, the holder and observe stop on every path."""
    # room for the held connections and wrk's in one worker (worker_connections is per worker), kept alive
    spec = ServerSpec(
        kind="nginx",
        mode="epoll",
        workers=2,
        accept_batch=1,
        in_flight=args.open + args.concurrency,
        keepalive=args.keepalive or args.open > 0,
    ).validated()
    ratios: list[float] = []
    paces: list[float] = []
    cpu_ratios: list[float] = []  # the workers' CPU per request, observed over alone
    with NginxServer(spec) as server, tempfile.TemporaryDirectory() as directory:
        host, port = server.address
        url = f"http://{host}:{port}/"
        connection = "keep-alive" if args.keepalive else "-H 'Connection: close'"
        print(
            f"server: nginx, 2 workers, epoll (multi_accept off), no work, on {host}:{port} "
            f"({config_line(server.directory)}); "
            f"wrk -t 2 -c {args.concurrency} {connection}, {args.duration:g} s per measurement"
        )
        with holding(host, port, args.open):
            if args.open:
                count = established(port)
                print(f"held: {count:,} connections established on :{port} (ss) of the {args.open:,} opened")
                if count < args.open:
                    raise SystemExit(f"{PROG}: error: nginx holds {count:,} of the {args.open:,} connections opened")
            wrk_round(url, args.concurrency, min(1.0, args.duration), close=not args.keepalive)  # warm up
            print(
                f"{'round':>5}  {'first':>7}  {'alone req/s':>11}  {'observed req/s':>14}  ratio  workers' µs/req "
                "alone, observed; observe's CPU; its load sampling: every, samples, sockets held; accepts counted; "
                "observe's start-up"
            )
            source = ""
            for number in range(1, args.rounds + 1):
                observed_first = number % 2 == 0
                if not observed_first:
                    alone, alone_us = timed_round(url, server.pids, args)
                with Observing(port, directory) as observing:
                    start_cpu, settled_in = observing.settle()
                    began, cpu_before = time.monotonic(), observing.cpu_s()
                    watched, watched_us = timed_round(url, server.pids, args)
                    cpu = (observing.cpu_s() - cpu_before) / (time.monotonic() - began)
                    result = observing.stop()
                if observed_first:
                    alone, alone_us = timed_round(url, server.pids, args)
                workers = result["workers"]
                counted = sum((w.get("accepts") if result["traced"] else w.get("seen")) or 0 for w in workers)
                source = str(result["source"])
                pace, samples, held = sampled(result)
                if pace is not None:
                    paces.append(pace)
                ratio = watched / alone if alone > 0 else 0.0
                ratios.append(ratio)
                cpu_ratios.append(watched_us / alone_us if alone_us > 0 else 0.0)
                print(
                    f"{number:>5}  {'observe' if observed_first else 'alone':>7}  {alone:>11.0f}  {watched:>14.0f}  "
                    f"{ratio:>5.3f}  {alone_us:6.1f} {watched_us:6.1f}  {cpu:5.1%}  "
                    f"{'-' if pace is None else f'{pace:.2f} s'}, {samples}, {held:,}; "
                    f"{counted:,} in {result['wall_s']} s; start-up {start_cpu:.2f} s CPU, "
                    f"settled in {settled_in:.1f} s"
                )
            if args.open:
                print(f"held after the rounds: {established(port):,} established on :{port} (ss)")
        print(f"observe counted: {source}")
        print(
            f"the workers' CPU per request, observed / alone: median {statistics.median(cpu_ratios):.3f} (min "
            f"{min(cpu_ratios):.3f}, max {max(cpu_ratios):.3f}): the eBPF program runs in them, on each accept"
        )
        server.check_alive()
    return ratios, paces


def main() -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=positive_int, default=7)
    parser.add_argument("--duration", type=seconds, default=5.0, help="seconds per measurement (default 5)")
    parser.add_argument("--concurrency", type=positive_int, default=50, help="connections in flight (default 50)")
    parser.add_argument(
        "--open", type=open_count, default=0, help="idle keep-alive connections held open throughout (default 0)"
    )
    parser.add_argument("--keepalive", action="store_true", help="wrk's load on kept connections, not one per request")
    args = parser.parse_args()
    missing = nginx_and_wrk_missing()
    if missing:
        print(f"{missing}: observed / alone: median n/a")
        return 0
    signal.signal(signal.SIGTERM, terminated)  # like Ctrl-C: every `with` and `finally` ends its processes
    load_before = print_machine()
    try:
        ratios, paces = measure(args)
    except ServerUnavailable as exc:
        print(f"{exc}: observed / alone: median n/a")
        return 0
    except KeyboardInterrupt as exc:
        print(f"{PROG}: interrupted; nginx, wrk and observe stopped", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    median = statistics.median(ratios)
    verdict = "OK" if median >= TARGET else "MISS"
    pace = f"every {statistics.median(paces):.2f} s (median over rounds)" if paces else "not read"
    print_machine()
    print(
        f"observed / alone: median {median:.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}) over {len(ratios)} "
        f"rounds; target >= {TARGET}: {verdict}; {args.open:,} connections held open, wrk "
        f"{'keep-alive' if args.keepalive else 'Connection: close'}; observe's load sampling {pace}; load average "
        f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    return 0


def open_count(text: str) -> int:
    """--open: 0 to MAX_OPEN connections (the helper's own process holds them under one open-file limit)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= MAX_OPEN:
        raise argparse.ArgumentTypeError(f"must be between 0 and {MAX_OPEN:,}, got {text}")
    return value


if __name__ == "__main__":
    sys.exit(main())
