"""Is the latency load generator fast enough not to be the bottleneck? Its rate against a C client's.

Both clients run the same closed loop (new connection, read the reply to EOF, close, next) with the same
concurrency split over the same number of processes, against the same trivial-work workers (one
WorkerPool for the whole benchmark), alternating which goes first each round so that the machine's drift
(±30% over minutes on a shared VM) falls on both. The reference is benchmarks/c/epoll_client.c, built
here with `cc`. Reported: each round's requests/s for both, their ratio and each client's CPU per
connection (the driver's from its own accounts, C's from the kernel's rusage of its processes) and the
workers' CPU per connection while each client ran (with few CPUs, client and workers together are what
sets the rate), then the median ratio against the target (issue 30: the load generator >= 1.0 x C). The
driver runs with `--driver` (default auto: io_uring where it can run); unless one was given, each round
also runs the epoll loop, so the gain of io_uring over it is measured in the same rounds.

Run: .venv/bin/python benchmarks/bench_latency_driver.py [--requests 30000] [--concurrency 50]
     [--rounds 5] [--procs 2] [--workers 2] [--mode epoll] [--driver auto|io_uring|epoll]
"""

from __future__ import annotations

import os
import platform
import resource
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "experiments"))  # the one-line parser the experiments use

from _cli import OneLineParser, positive_int  # noqa: E402  (experiments/_cli.py)
from cbuild import NoCompiler, build  # noqa: E402

from accept_order.core.spec import DRIVERS, ConcurrentLoad, Driver, ServerSpec  # noqa: E402
from accept_order.core.target import Attribution  # noqa: E402
from accept_order.loads.drivers import chains_unavailable  # noqa: E402
from accept_order.loads.generator import LoadResult, run_load, split  # noqa: E402
from accept_order.servers.modes import MODES  # noqa: E402
from accept_order.servers.pool import WorkerPool  # noqa: E402

TARGET = 1.0  # issue 30 (0.9 in issue 7): the load generator against the C epoll client, median of paired rounds
C_SOURCE = HERE / "c" / "epoll_client.c"


def c_rate(binary: Path, address: tuple[str, int], requests: int, concurrency: int, procs: int) -> tuple[float, float]:
    """Served requests/s of `procs` C clients sharing the requests and the concurrency, and their CPU-µs per
    served request (the rusage of the clients, reaped here: the workers are reaped only at the end)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
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
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return ok / wall, 1e6 * cpu / max(ok, 1)


def py_run(
    address: tuple[str, int], attribution: Attribution, requests: int, concurrency: int, procs: int, driver: Driver
) -> LoadResult:
    load = ConcurrentLoad(connections=requests, concurrency=concurrency, driver_procs=procs, driver=driver)
    result = run_load(address, attribution, load)
    if result.failed:
        print(f"  note: the driver counted {result.failed} failed requests: {dict(result.errors)}")
    return result


def uring_binding() -> str:
    """Which binding the io_uring loop runs on here (loads/uring_loop.py): liburing's linked chains, or uring-api
    and why (the drivers fall back to it on their own where the chains' descriptor table cannot be set up)."""
    why = chains_unavailable()
    return "liburing's linked chains" if why is None else f"uring-api; liburing's chains: {why}"


def workers_cpu_s(pids: list[int]) -> float:
    """CPU seconds the workers have run so far (/proc/PID/schedstat: ns on a CPU)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total / 1e9


def client_cpu(result: LoadResult) -> float:
    """The drivers' CPU-µs per finished connection."""
    done = sum(d.requests for d in result.drivers)
    return 1e6 * sum(d.cpu_s for d in result.drivers) / max(done, 1)


def main() -> int:
    parser = OneLineParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=positive_int, default=30_000)
    parser.add_argument("--concurrency", type=positive_int, default=50)
    parser.add_argument("--rounds", type=positive_int, default=5)
    parser.add_argument("--procs", type=positive_int, default=2, help="client processes, for both clients")
    parser.add_argument("--workers", type=positive_int, default=2)
    parser.add_argument("--mode", choices=list(MODES), default="epoll")
    parser.add_argument("--driver", choices=DRIVERS, default=None, help="the driver's loop (default auto, and epoll)")
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
    driver: Driver = args.driver or "auto"
    with_epoll = args.driver is None  # the epoll loop in the same rounds, for its gain
    ratios: list[float] = []
    epoll_ratios: list[float] = []
    cpus: dict[str, list[float]] = {"C": [], "driver": [], "epoll": []}
    workers: dict[str, list[float]] = {"C": [], "driver": [], "epoll": []}  # the workers' CPU-µs per connection
    loops: set[str] = set()
    with WorkerPool(spec) as pool:
        address, attribution = pool.address, pool.attribution
        c_rate(binary, address, min(args.requests, 2000), args.concurrency, args.procs)  # warm up
        py_run(address, attribution, min(args.requests, 2000), args.concurrency, args.procs, driver)

        def c() -> tuple[float, float]:
            return c_rate(binary, address, args.requests, args.concurrency, args.procs)

        def py(loop: Driver) -> LoadResult:
            return py_run(address, attribution, args.requests, args.concurrency, args.procs, loop)

        head = f"{'round':>5}  {'C req/s':>9}  {'driver req/s':>12}  {'ratio':>5}"
        print(f"{head}  CPU-us/conn C, driver" + (", epoll req/s, ratio, CPU-us/conn" if with_epoll else ""))
        for round_ in range(1, args.rounds + 1):
            # the order turns every round, so that the machine's drift falls on every client alike
            runs: dict[str, object] = {}
            order = ["C", "driver", "epoll"] if with_epoll else ["C", "driver"]
            shift = (round_ - 1) % len(order)
            for name in order[shift:] + order[:shift]:
                before = workers_cpu_s(pool.pids)
                runs[name] = c() if name == "C" else py(driver if name == "driver" else "epoll")
                workers[name].append(1e6 * (workers_cpu_s(pool.pids) - before) / args.requests)
            c_req, c_cpu = runs["C"]  # type: ignore[misc]
            mine: LoadResult = runs["driver"]  # type: ignore[assignment]
            loops.update(d.loop or "?" for d in mine.drivers)
            ratio = mine.throughput / c_req
            ratios.append(ratio)
            cpus["C"].append(c_cpu)
            cpus["driver"].append(client_cpu(mine))
            line = f"{round_:>5}  {c_req:>9.0f}  {mine.throughput:>12.0f}  {ratio:>5.2f}  "
            line += f"{c_cpu:.0f}, {cpus['driver'][-1]:.0f}"
            if with_epoll:
                old: LoadResult = runs["epoll"]  # type: ignore[assignment]
                epoll_ratios.append(old.throughput / c_req)
                cpus["epoll"].append(client_cpu(old))
                line += f", {old.throughput:.0f}, {epoll_ratios[-1]:.2f}, {cpus['epoll'][-1]:.0f}"
            print(line)
        pool.check_alive()
    median = statistics.median(ratios)
    verdict = "OK" if median >= TARGET else "MISS"
    print(f"the driver ran on {', '.join(sorted(loops))}" + (f" ({uring_binding()})" if "io_uring" in loops else ""))
    cpu_line = ", ".join(f"{name} {statistics.median(v):.0f}" for name, v in cpus.items() if v)
    print(f"CPU-us per connection, medians: {cpu_line}")
    workers_line = ", ".join(f"with {name} {statistics.median(v):.0f}" for name, v in workers.items() if v)
    print(f"the workers' CPU-us per connection, medians: {workers_line}")
    # Beside other work the rates follow the CPU the scheduler shares out, not the clients' cost: what client and
    # workers need together per connection is what sets the rate once they have the CPUs to themselves.
    both = {name: [a + b for a, b in zip(v, workers[name], strict=True)] for name, v in cpus.items() if v}
    both_line = ", ".join(f"{name} {statistics.median(v):.0f}" for name, v in both.items())
    print(f"client and workers together, CPU-us per connection, medians: {both_line}")
    if epoll_ratios:
        print(f"epoll loop / C: median {statistics.median(epoll_ratios):.2f} (the fallback, same rounds)")
    print(
        f"driver / C: median {median:.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}) over "
        f"{len(ratios)} rounds; target >= {TARGET}: {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
