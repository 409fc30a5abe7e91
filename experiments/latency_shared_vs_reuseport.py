"""Seed 000, second part: latency of a shared accept queue versus SO_REUSEPORT, under load.

The seed ran 12 nginx workers pinned one per CPU, each burning CPU in a Lua loop per request, and drove
them with `benchhttp -n 100000 -c 200` (one connection per request). Same total work; its histograms:

  shared queue     min:3.61 avg:30.39 med=30.28 max:72.65  dev:1.58  count:100000
  multiple queues  min:1.49 avg:31.37 med=24.67 max:144.55 dev:25.27 count:100000

i.e. a similar average but a much wider spread with one queue per worker: the kernel hashes each new
connection to a queue whether or not that worker is busy, so some requests wait behind a long queue while
another worker has none, where with one shared queue whichever worker is free takes the next one.

Here: `accept-order latency --modes` with the same shape on this machine. Workers are pinned one per
CPU (like worker_cpu_affinity), burn `--work-us` of CPU per request in a busy loop, and accept one
connection per wakeup (`--accept-batch 1`, nginx's default multi_accept off). The concurrency defaults
to 16 per worker, the seed's 200 over 12. Modes: by default every mode that wakes one worker per
connection (a mode's metadata, servers.modes: `herds` false), which on Linux is

  blocking      one shared queue, workers blocked in accept()
  epoll         one shared queue, one epoll per worker with EPOLLEXCLUSIVE (nginx, accept_mutex off)
  epoll-shared  one shared queue, one epoll instance shared by all workers
  reuseport     one SO_REUSEPORT socket and queue per worker (nginx `listen ... reuseport`)

Which are shared-queue modes and which have a queue per worker is read from each mode's `queue`
metadata, never from its name. The script then says, from its own numbers, whether the seed's finding
holds here: each shared-queue mode's average within 25% of the per-worker-queue mode's ("similar"), and
the per-worker-queue mode's deviation at least twice as large ("much wider"). The load generator runs
on the same CPUs as the workers (unlike the seed's separate client machine); the report says how long
it waited for a CPU, which is part of every latency here.

Run: .venv/bin/python experiments/latency_shared_vs_reuseport.py [--connections 20000] [--work-us 1000]
     [--concurrency N] [--workers N] [--modes blocking,epoll,reuseport] [--no-pin] [--json out.json]
"""

from __future__ import annotations

import sys

from _cli import STDOUT, OneLineParser, json_to_stdout, mode_list, one_line_errors  # experiments/_cli.py, beside this
from rich.console import Console
from rich.text import Text

from accept_order import api
from accept_order.analysis.tails import tail_verdict
from accept_order.core.cpus import allowed_cpus
from accept_order.core.errors import PlanError
from accept_order.core.spec import ConcurrentLoad, pinned
from accept_order.experiments.latency.compare_report import compare_report
from accept_order.experiments.latency.result import LatencyResult
from accept_order.results import envelope
from accept_order.servers.modes import DEFAULT_MODE, MODES
from accept_order.servers.registry import runnable

SIMILAR_AVG = 1.25  # averages within 25% of each other are "similar" (the seed's differ by 3%)
WIDER_DEV = 2.0  # "much wider": at least twice the deviation (the seed's is 16x)
PER_WORKER = 16  # the seed's concurrency per worker: 200 clients over 12 workers
DEFAULT_MODES = ",".join(name for name, mode in MODES.items() if not mode.herds)


def finding(results: list[LatencyResult]) -> tuple[bool, list[str]]:
    """Does the seed's finding hold in these results? (holds, one sentence per shared-queue mode)."""
    served = [r for r in results if r.ok]
    per_worker = [r for r in served if MODES[r.mode].queue == "per-worker"]
    shared = [r for r in served if MODES[r.mode].queue == "shared"]
    if not per_worker or not shared:
        return False, [
            "cannot tell: need a mode with one queue per worker (reuseport) and at least one shared-queue "
            "mode that served requests"
        ]
    holds, lines = True, []
    reuse = per_worker[0]
    rh = reuse.histogram
    for s in shared:
        sh = s.histogram
        avg = rh.mean_us / sh.mean_us
        dev = rh.stdev_us / sh.stdev_us if sh.stdev_us else float("inf")
        p99 = rh.percentile(99) / sh.percentile(99)
        similar = 1 / SIMILAR_AVG <= avg <= SIMILAR_AVG
        wider = dev >= WIDER_DEV
        ok = similar and wider
        holds = holds and ok
        lines.append(
            f"{'holds' if ok else 'does not hold'} against {s.mode}: {reuse.mode}'s average is {avg:.2f}× "
            f"({rh.mean_us / 1000:.2f} vs {sh.mean_us / 1000:.2f} ms, "
            f"{'similar' if similar else 'not similar'}), its deviation {dev:.2f}× "
            f"({rh.stdev_us / 1000:.2f} vs {sh.stdev_us / 1000:.2f} ms, "
            f"{'much wider' if wider else 'not much wider'}) and its p99 {p99:.2f}×"
        )
    return holds, lines


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(description="Seed 000: latency of a shared accept queue versus SO_REUSEPORT.")
    parser.add_argument(
        "--modes", type=mode_list, default=DEFAULT_MODES, help=f"modes to compare, or all (default: {DEFAULT_MODES})"
    )
    parser.add_argument("--workers", type=int, default=None, help="default: one per CPU")
    # --requests: this script's name for it before accept-order 0.2 said connections everywhere.
    parser.add_argument("--connections", "-n", "--requests", type=int, default=20_000, help="per mode")
    parser.add_argument("--concurrency", type=int, default=None, help=f"default: {PER_WORKER} per worker")
    parser.add_argument("--work-us", type=int, default=1000, help="CPU burnt per request (busy loop)")
    parser.add_argument("--accept-batch", type=int, default=1, help="accepts per wakeup (0: until EAGAIN)")
    parser.add_argument("--driver-procs", type=int, default=2)
    parser.add_argument("--no-pin", action="store_true", help="do not pin workers one per CPU")
    parser.add_argument(
        "--json",
        dest="json_path",
        help="write every run as JSON (accept-order show; -: on stdout, the tables on stderr)",
    )
    args = parser.parse_args(argv)
    out = Console(highlight=False, stderr=args.json_path == STDOUT)
    with one_line_errors(parser.prog):
        modes = args.modes
        workers = args.workers if args.workers is not None else len(allowed_cpus())
        if workers < 1:
            raise PlanError(f"--workers must be at least 1, got {workers}")
        available = runnable("builtin", modes)[0]
        server, load = api.split_options(
            dict(
                mode=available[0] if available else DEFAULT_MODE,  # the shared settings, checked once
                workers=workers,
                connections=args.connections,
                concurrency=args.concurrency if args.concurrency is not None else PER_WORKER * workers,
                work_us=args.work_us,
                accept_batch=args.accept_batch,
                driver_procs=args.driver_procs,
            ),
            ConcurrentLoad,
        )
        results, skipped = api.compare_latency(pinned(server, not args.no_pin).validated(), load, modes)
    verdict = tail_verdict(results)
    doc = {"runs": [r.to_dict() for r in results], "skipped": skipped, "verdict": verdict.to_dict()}
    status = 0  # the JSON first (the tables go to stderr then), the tables even when stdout could not take it
    if args.json_path == STDOUT:
        status = json_to_stdout(parser.prog, envelope.saved_text("latency-compare", doc, "stdout"))
    elif args.json_path:
        envelope.save(args.json_path, "latency-compare", doc)
    out.print(compare_report(results, skipped, verdict), crop=False)
    holds, lines = finding(results)
    head = "holds here" if holds else "does not hold here"
    out.print(
        Text.assemble(
            ("Seed 000's finding (similar average, much wider spread with reuseport) ", "bold"),
            (head, "bold green" if holds else "bold yellow"),
            ":",
        ),
        soft_wrap=True,
    )
    for line in lines:
        out.print(f"  {line}", soft_wrap=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
