"""The latency load generator against wrk on the same nginx, in the same run (issue 8: >= 0.9 of wrk).

One nginx (2 workers, its default epoll mode, no work) is started by the tool. Rounds alternate between
`wrk -t 2 -c C -d D -H 'Connection: close'` and accept-order's closed-loop load (2 driver processes, C
connections in flight, HTTP/1.0: nginx closes after each answer, as with wrk's Connection: close), the
order flipping every round. Each round prints both rates and their ratio; the figure to read is the
median of the per-round ratios, against the 0.9 target. Run: .venv/bin/python benchmarks/bench_nginx_load.py
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))  # the shared parser
from _cli import OneLineParser, positive_int  # noqa: E402  (experiments/_cli.py)

from accept_order.loads.closed_loop import run_load  # noqa: E402
from accept_order.servers.nginx import NginxServer  # noqa: E402
from accept_order.servers.nginx_config import ServerUnavailable  # noqa: E402
from accept_order.spec import ClosedLoopLoad, ServerSpec  # noqa: E402

TARGET = 0.9


def wrk_rate(url: str, concurrency: int, duration_s: int) -> tuple[float, str]:
    """Requests per second from wrk's own summary, and its error line (if any)."""
    cmd = ["wrk", "-t", "2", "-c", str(concurrency), "-d", f"{duration_s}s", "-H", "Connection: close", url]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=duration_s + 30).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if match is None:
        raise SystemExit(f"bench_nginx_load.py: error: wrk printed no rate: {out.strip()[:200]!r}")
    errors = " ".join(line.strip() for line in out.splitlines() if "error" in line.lower() or "Non-2xx" in line)
    return (float(match.group(1)) if match else 0.0), errors


def main() -> int:
    parser = OneLineParser(description="accept-order's load generator against wrk, on the same nginx")
    parser.add_argument("--rounds", type=positive_int, default=5)
    parser.add_argument("--duration", type=positive_int, default=3, help="whole seconds per measurement (wrk's unit)")
    parser.add_argument("--concurrency", type=positive_int, default=50)
    args = parser.parse_args()
    load_avg = os.getloadavg()[0]
    print(f"machine: {os.uname().sysname} {os.uname().release}, {os.cpu_count()} CPUs, load average {load_avg:.2f}")
    if shutil.which("wrk") is None:
        print("wrk is not installed (apt-get install wrk): ratio n/a")
        return 0
    spec = ServerSpec(server="nginx", mode="epoll", workers=2, accept_batch=1).validated()
    try:
        server = NginxServer(spec)
        server.__enter__()
    except ServerUnavailable as exc:
        print(f"{exc}: ratio n/a")
        return 0
    ratios: list[float] = []
    try:
        host, port = server.address
        url = f"http://{host}:{port}/"
        load = ClosedLoopLoad(connections=None, duration_s=args.duration, concurrency=args.concurrency, driver_procs=2)
        print(f"nginx 2 workers on {host}:{port}; {args.concurrency} connections in flight, {args.duration:g} s each")
        print("round   wrk req/s   ours req/s  ratio  our errors  wrk errors")
        for i in range(args.rounds):
            first_ours = i % 2 == 1  # alternate which client goes first
            results: dict[str, tuple[float, str]] = {}
            for who in ("ours", "wrk") if first_ours else ("wrk", "ours"):
                if who == "wrk":
                    results["wrk"] = wrk_rate(url, args.concurrency, args.duration)
                else:
                    outcome = run_load(server.address, server.attribution, load, protocol=server.protocol.closing())
                    results["ours"] = (outcome.throughput, str(sum(outcome.errors.values())))
            (wrk, wrk_errors), (ours, our_errors) = results["wrk"], results["ours"]
            ratio = ours / wrk if wrk else 0.0
            ratios.append(ratio)
            print(f"{i + 1:5}  {wrk:10.0f}  {ours:11.0f}  {ratio:5.2f}  {our_errors:>10}  {wrk_errors or '-'}")
    finally:
        server.close()
    median = statistics.median(ratios)
    verdict = "OK" if median >= TARGET else "MISS"
    print(
        f"ours / wrk: median {median:.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}) over {len(ratios)} rounds; "
        f"target >= {TARGET}: {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
