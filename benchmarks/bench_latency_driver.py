"""Is the latency load generator fast enough not to be the bottleneck? Its rate against a C client's.

Both clients run the same closed loop (new connection, read the reply to EOF, close, next) with the same
concurrency split over the same number of processes, against the same trivial-work workers (one
WorkerPool for the whole benchmark), alternating which goes first each round so that the machine's drift
(±30% over minutes on a shared VM) falls on both. The reference is benchmarks/c/epoll_client.c, built
here with `cc`. Reported: each round's requests/s for both and their ratio, then the median ratio against
the target (driver >= 0.9 x C).

Run: .venv/bin/python benchmarks/bench_latency_driver.py [--requests 30000] [--concurrency 50]
     [--rounds 5] [--procs 2] [--workers 2] [--mode epoll]
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "experiments"))  # the one-line parser the experiments use

from _cli import OneLineParser, positive_int  # noqa: E402  (experiments/_cli.py)
from cbuild import NoCompiler, build  # noqa: E402

from accept_order.core.spec import ConcurrentLoad, ServerSpec  # noqa: E402
from accept_order.core.target import Attribution  # noqa: E402
from accept_order.loads.generator import LoadResult, run_load, split  # noqa: E402
from accept_order.servers.modes import MODES  # noqa: E402
from accept_order.servers.pool import WorkerPool  # noqa: E402

TARGET = 0.9  # issue 7: the load generator against the C epoll client, median of paired rounds
C_SOURCE = HERE / "c" / "epoll_client.c"


def c_rate(binary: Path, address: tuple[str, int], requests: int, concurrency: int, procs: int) -> float:
    """Served requests/s of `procs` C clients sharing the requests and the concurrency."""
    host, port = address
    clients = [
        subprocess.Popen([str(binary), host, str(port), str(n), str(c)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for n, c in zip(split(requests, procs), split(concurrency, procs), strict=True)
    ]
    ok, wall = 0, 0.0
    for proc in clients:
        out, err = proc.communicate(timeout=120)
        fields = out.decode().split()
        if proc.returncode != 0 or len(fields) != 6:
            raise SystemExit(f"bench_latency_driver: C client failed ({proc.returncode}): {err.decode()}")
        ok += int(fields[1])
        wall = max(wall, float(fields[5]))
    return ok / wall


def py_run(
    address: tuple[str, int], attribution: Attribution, requests: int, concurrency: int, procs: int
) -> LoadResult:
    load = ConcurrentLoad(connections=requests, concurrency=concurrency, driver_procs=procs)
    result = run_load(address, attribution, load)
    if result.failed:
        print(f"  note: the driver counted {result.failed} failed requests: {dict(result.errors)}")
    return result


def main() -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=positive_int, default=30_000)
    parser.add_argument("--concurrency", type=positive_int, default=50)
    parser.add_argument("--rounds", type=positive_int, default=5)
    parser.add_argument("--procs", type=positive_int, default=2, help="client processes, for both clients")
    parser.add_argument("--workers", type=positive_int, default=2)
    parser.add_argument("--mode", choices=list(MODES), default="epoll")
    args = parser.parse_args()
    try:
        binary = build(C_SOURCE, ("-O2", "-Wall"))
    except (NoCompiler, subprocess.CalledProcessError) as exc:
        print(f"bench_latency_driver: cannot build the C reference: {exc}", file=sys.stderr)
        return 1

    print(
        f"machine: Linux {platform.release()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"clients: {args.procs} processes each, {args.concurrency} concurrent, {args.requests} requests "
        f"per measurement; server: {args.workers} {args.mode} workers, no work"
    )
    print(
        "note: clients and workers share this machine's CPUs; with few CPUs the server side also limits "
        "both rates, so the ratio is the figure to read, not the absolute rate"
    )
    spec = ServerSpec(mode=args.mode, workers=args.workers).validated()
    ratios: list[float] = []
    with WorkerPool(spec) as pool:
        address, attribution = pool.address, pool.attribution
        c_rate(binary, address, min(args.requests, 2000), args.concurrency, args.procs)  # warm up
        py_run(address, attribution, min(args.requests, 2000), args.concurrency, args.procs)
        head = f"{'round':>5}  {'C req/s':>9}  {'driver req/s':>12}  {'ratio':>5}"
        print(f"{head}  driver CPU / waiting for CPU")
        for round_ in range(1, args.rounds + 1):
            if round_ % 2:
                c = c_rate(binary, address, args.requests, args.concurrency, args.procs)
                py = py_run(address, attribution, args.requests, args.concurrency, args.procs)
            else:
                py = py_run(address, attribution, args.requests, args.concurrency, args.procs)
                c = c_rate(binary, address, args.requests, args.concurrency, args.procs)
            ratio = py.throughput / c
            ratios.append(ratio)
            usage = ", ".join(
                f"{100 * d.cpu_fraction:.0f}%/{100 * (d.runqueue_s or 0) / d.wall_s:.0f}%" for d in py.drivers
            )
            print(f"{round_:>5}  {c:>9.0f}  {py.throughput:>12.0f}  {ratio:>5.2f}  {usage}")
        pool.check_alive()
    median = statistics.median(ratios)
    verdict = "OK" if median >= TARGET else "MISS"
    print(
        f"driver / C: median {median:.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}) over "
        f"{len(ratios)} rounds; target >= {TARGET}: {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
