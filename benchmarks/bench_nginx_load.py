"""The latency load generator against wrk on the same nginx, in the same run (issue 8: >= 0.9 of wrk).

One nginx (2 workers, its default epoll mode, no work) is started by the tool and serves every round.
Rounds alternate between `wrk -t 2 -c C -d D -H 'Connection: close'` (Debian's wrk) and accept-order's
closed-loop load (`ConcurrentLoad(duration_s=D, concurrency=C, driver_procs=2)` in the nginx target's
protocol, HTTP/1.0, so nginx closes after each answer as it does for wrk's Connection: close): both use one
connection per request. The order flips every round so that the machine's drift falls on both. Printed:
each round's two rates, their ratio and both clients' errors, then the median of the per-round ratios
against the 0.9 target, with the load average before and after. wrk takes whole seconds only: for a
fractional --duration it is started for the next whole second and stopped with SIGINT at D (it then
prints its summary over the time it ran).

Run: .venv/bin/python benchmarks/bench_nginx_load.py [--rounds 5] [--duration 3] [--concurrency 50]
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))  # the one-line parser

from _cli import OneLineParser, positive_int  # noqa: E402  (experiments/_cli.py)

from accept_order.core.errors import ServerUnavailable
from accept_order.core.signals import Terminated  # noqa: E402
from accept_order.core.spec import ConcurrentLoad, ServerSpec  # noqa: E402
from accept_order.loads.generator import LoadResult, run_load  # noqa: E402
from accept_order.servers.launched.nginx import NginxServer  # noqa: E402
from accept_order.servers.launched.nginx_config import nginx_binary  # noqa: E402

TARGET = 0.9  # issue 8: the load generator against wrk on the same nginx, median of paired rounds
PROG = "bench_nginx_load.py"
WARMUP_S = 0.5
WRK_SOCKET_ERRORS = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
WRK_NON_2XX = re.compile(r"Non-2xx or 3xx responses: (\d+)")


def seconds(text: str) -> float:
    try:
        value = float(text.removesuffix("s"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0.1 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"must be between 0.1 and 3600 s, got {text}")
    return value


def wrk_round(url: str, concurrency: int, duration_s: float, close: bool = True) -> tuple[float, int, str]:
    """wrk's own Requests/sec, its error count (socket errors plus non-2xx answers) and their wording.
    `close`: one request per connection (`Connection: close`); else wrk's own keep-alive, every request on
    the `concurrency` connections it opened at the start."""
    whole = max(1, math.ceil(duration_s))
    header = ["-H", "Connection: close"] if close else []
    cmd = ["wrk", "-t", "2", "-c", str(concurrency), "-d", f"{whole}s", *header, url]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if whole != duration_s:
            try:
                proc.communicate(timeout=duration_s)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)  # wrk stops and prints its summary over the time it ran
        out, err = proc.communicate(timeout=whole + 30)
    finally:  # an exception on the way (timeout, Ctrl-C, SIGTERM): wrk must not outlive the benchmark
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if proc.returncode != 0 or rate is None:
        raise SystemExit(f"{PROG}: error: wrk (exit {proc.returncode}) printed no rate: {(out + err).strip()[:200]!r}")
    errors, words = 0, []
    if sockets := WRK_SOCKET_ERRORS.search(out):
        errors += sum(int(n) for n in sockets.groups())
        words.append(sockets.group(0))
    if non_2xx := WRK_NON_2XX.search(out):
        errors += int(non_2xx.group(1))
        words.append(non_2xx.group(0))
    return float(rate.group(1)), errors, "; ".join(words)


def our_round(server: NginxServer, concurrency: int, duration_s: float) -> LoadResult:
    load = ConcurrentLoad(connections=None, duration_s=duration_s, concurrency=concurrency, driver_procs=2)
    result = run_load(server.address, server.attribution, load, protocol=server.protocol)
    if result.interrupted is not None:  # run_load keeps a partial result on Ctrl-C; the benchmark stops
        raise result.interrupted
    return result


def measure(args: argparse.Namespace) -> list[float]:
    """Start nginx, run the paired rounds, print one line per round; nginx stops on every path."""
    spec = ServerSpec(kind="nginx", mode="epoll", workers=2, accept_batch=1).validated()
    ratios: list[float] = []
    with NginxServer(spec) as server:
        host, port = server.address
        url = f"http://{host}:{port}/"
        print(
            f"server: nginx, 2 workers, epoll (multi_accept off), no work, on {host}:{port}; clients: "
            f"{args.concurrency} connections in flight over 2 threads (wrk) / 2 processes (ours), one request "
            f"per connection, {args.duration:g} s per measurement"
        )
        wrk_round(url, args.concurrency, WARMUP_S)  # warm up both (not counted)
        our_round(server, args.concurrency, WARMUP_S)
        print(f"{'round':>5}  {'first':>5}  {'wrk req/s':>9}  {'ours req/s':>10}  ratio  our errors / wrk errors")
        for number in range(1, args.rounds + 1):
            ours_first = number % 2 == 0
            if ours_first:
                ours = our_round(server, args.concurrency, args.duration)
                wrk, wrk_errors, wrk_words = wrk_round(url, args.concurrency, args.duration)
            else:
                wrk, wrk_errors, wrk_words = wrk_round(url, args.concurrency, args.duration)
                ours = our_round(server, args.concurrency, args.duration)
            ratio = ours.throughput / wrk if wrk > 0 else 0.0
            ratios.append(ratio)
            our_words = ", ".join(f"{name} {n}" for name, n in sorted(ours.errors.items()))
            print(
                f"{number:>5}  {'ours' if ours_first else 'wrk':>5}  {wrk:>9.0f}  {ours.throughput:>10.0f}  "
                f"{ratio:>5.2f}  {ours.failed}{f' ({our_words})' if our_words else ''} / {wrk_errors}"
                f"{f' ({wrk_words})' if wrk_errors else ''}"
            )
        server.check_alive()
    return ratios


def terminated(signum: int, frame: object) -> None:
    raise Terminated


def nginx_and_wrk_missing() -> str | None:
    """Why a benchmark of nginx under wrk cannot run here (this one and bench_observe_overhead), or None."""
    if shutil.which("wrk") is None:
        return "wrk is not installed (apt-get install wrk)"
    try:
        nginx_binary()
    except ServerUnavailable as exc:
        return str(exc)
    return None


def print_machine() -> float:
    """Say the machine and its load average before the rounds; the load average, for the closing line."""
    load_before = os.getloadavg()[0]
    print(
        f"machine: Linux {platform.release()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {load_before:.2f}"
    )
    return load_before


def main() -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=positive_int, default=5)
    parser.add_argument("--duration", type=seconds, default=3.0, help="seconds per measurement (default 3)")
    parser.add_argument("--concurrency", type=positive_int, default=50, help="connections in flight (default 50)")
    args = parser.parse_args()
    missing = nginx_and_wrk_missing()
    if missing:
        print(f"{missing}: ours / wrk: median n/a")
        return 0
    signal.signal(signal.SIGTERM, terminated)  # like Ctrl-C: every `with` and `finally` ends its processes
    load_before = print_machine()
    try:
        ratios = measure(args)
    except ServerUnavailable as exc:  # installed, but it would not start here
        print(f"{exc}: ours / wrk: median n/a")
        return 0
    except KeyboardInterrupt as exc:
        print(f"{PROG}: interrupted; nginx, wrk and the drivers stopped", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    median = statistics.median(ratios)
    verdict = "OK" if median >= TARGET else "MISS"
    print(
        f"ours / wrk: median {median:.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}) over {len(ratios)} "
        f"rounds; target >= {TARGET}: {verdict}; load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
