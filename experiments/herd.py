"""Seed 004 (wenfh2020, "探索惊群 ①", thundering herd): herd versus no herd, measured from inside.

The seed ran nginx with 4 workers in four configurations and timed bursts of 1000..25000 concurrent
clients; its "energy" table was left empty, and the wasted wakeups were counted with strace. Here the
same comparison runs on this tool's workers, which count their own wakeups, with the kernel's
context-switch and CPU counters (psutil deltas) and its drop counters (/proc/net/netstat) alongside:

  seed column                 mode here     how workers wait
  ngx-no (herd)               epoll-herd    one epoll per worker, no EPOLLEXCLUSIVE
  ngx-NGX_EXCLUSIVE_EVENT     epoll         one epoll per worker, EPOLLEXCLUSIVE
  ngx-reuseport               reuseport     one SO_REUSEPORT socket (and queue) per worker
  (extra herds)               poll, select  poll()/select() on the shared socket
  (extra, no herd)            blocking,     blocking accept(), or one epoll shared by all workers,
                              epoll-shared  on the shared socket
  ngx-accept_mutex            -             nginx's user-space lock; no kernel mechanism to show

Each mode's seed column comes from its metadata (servers.modes): a queue per worker is ngx-reuseport,
a mode that wakes every idle worker is the herd of ngx-no, and one epoll per worker that wakes the
first registered is NGX_EXCLUSIVE_EVENT.

Table 1, the herd itself: sequential connections, every worker idle and asleep before each one;
woken/conn is voluntary context switches per connection = workers one connection woke.
Table 2, the seed's speed and energy tables: a burst of N connections started as fast as this
(Python, single-threaded) client can, per mode. "launch" is how long starting them took: when it is
close to "all served", the client, not the server, set the pace.

Run: .venv/bin/python experiments/herd.py [--workers 4] [--connections 20] [--clients 200,1000]
     [--modes all|epoll-herd,epoll,reuseport,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from _cli import STDOUT, OneLineParser, json_to_stdout, mode_list, one_line_errors, positive_int  # experiments/_cli.py
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from accept_order import api
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments.herd.report import herd_report
from accept_order.experiments.order.result import RunResult
from accept_order.servers.modes import MODES

BURST_GAP_MS = 0.001  # start the next connection as soon as the client loop comes round


def seed_column(mode: str) -> str:
    """The seed's nginx configuration with the same kernel mechanism as `mode`, from its metadata."""
    info = MODES[mode]
    if info.queue == "per-worker":
        return "ngx-reuseport"
    if info.herds:
        return "ngx-no (herd)"
    if info.model == "first-registered":
        return "ngx-NGX_EXCLUSIVE_EVENT"
    return "(no seed column)"


def int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give one or more counts >= 1, e.g. 200,1000")
    return values


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = OneLineParser(prog="experiments/herd.py", description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=positive_int, default=4, help="worker processes (seed: 4)")
    parser.add_argument("--connections", type=positive_int, default=20, help="sequential connections")
    parser.add_argument("--clients", type=int_list, default=[200, 1000], help="burst sizes, e.g. 200,1000")
    parser.add_argument("--modes", type=mode_list, default="all", help="modes to compare (default: all)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds before a connection fails")
    parser.add_argument("--json", dest="json_path", help="write every run as JSON (-: on stdout, the tables on stderr)")
    return parser.parse_args(argv)


def burst(mode: str, workers: int, clients: int, timeout_s: float) -> RunResult:
    return api.run(
        mode=mode,
        workers=workers,
        connections=clients,
        gap_ms=BURST_GAP_MS,
        settle=False,
        timeout_s=timeout_s,
    )


def burst_row(result: RunResult) -> dict[str, Any]:
    recs = result.records
    counters = result.counters
    return {
        "mode": result.mode,
        "clients": len(recs),
        "served": result.served,
        "failed": result.failed,
        "all_served_s": max((r.start_us + r.latency_us for r in recs), default=0) / 1e6,
        "launch_s": max((r.start_us for r in recs), default=0) / 1e6,
        "wakeups": sum(c.wakeups for c in counters),
        "empty": sum(c.empty for c in counters),
        "sleeps": sum(c.voluntary_switches or 0 for c in counters),
        "preempt": sum(c.involuntary_switches or 0 for c in counters),
        "cpu_ms": 1000 * sum(c.cpu_s or 0.0 for c in counters),
        "counters": result.evidence.get("counters", {}),
        "shared_namespace": result.evidence.get("shared_namespace", True),
    }


def burst_table(rows: list[dict[str, Any]], workers: int) -> RenderableType:
    table = Table(title=f"Burst of N clients, {workers} workers (seed 004's speed and energy tables)")
    right = (
        "clients", "all served s", "launch s", "failed", "wakeups", "empty", "sleeps", "sleeps/client",
        "preempt", "cpu ms",
    )  # fmt: skip
    for name in ("seed column / mode", *right, "kernel counters"):
        table.add_column(name, justify="right" if name in right else "left")
    for row in rows:
        moved = ", ".join(f"{n.removeprefix('TcpExt')} {v:+d}" for n, v in row["counters"].items())
        table.add_row(
            f"{seed_column(row['mode'])} / {row['mode']}",
            str(row["clients"]),
            f"{row['all_served_s']:.3f}",
            f"{row['launch_s']:.3f}",
            str(row["failed"]),
            str(row["wakeups"]),
            str(row["empty"]),
            str(row["sleeps"]),
            f"{row['sleeps'] / row['clients']:.2f}",
            str(row["preempt"]),
            f"{row['cpu_ms']:.0f}",
            moved or "-",
        )
    shared = any(r["shared_namespace"] for r in rows)
    notes = Text(
        "all served: first connect to last reply; launch: first to last connect started (client pace); "
        "sleeps/preempt: voluntary/involuntary context switches of all workers; cpu ms: workers' CPU "
        "time (clock-tick resolution). A burst keeps workers busy, so fewer of them are asleep to be "
        "woken and the herd's cost varies from run to run; repeat it before reading much into it. "
        "The idle-server cost is table 1."
        + (" Kernel counters are the whole network namespace's (shared)." if shared else ""),
        style="dim",
    )
    return Group(table, notes)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    out = Console(highlight=False, stderr=args.json_path == STDOUT)
    with one_line_errors("experiments/herd.py"):
        server = ServerSpec(workers=args.workers).validated()
        herd = api.herd(server, SequentialLoad(connections=args.connections, timeout_s=args.timeout), args.modes)
        out.print(Text("Table 1: herd versus no herd, one connection at a time", style="bold"))
        out.print(herd_report(herd))
        rows = []
        for clients in args.clients:
            for mode in [r.mode for r in herd.runs]:
                rows.append(burst_row(burst(mode, args.workers, clients, args.timeout)))
        out.print(Text("\nTable 2", style="bold"))
        out.print(burst_table(rows, args.workers))
    if args.json_path == STDOUT:
        return json_to_stdout(
            "experiments/herd.py", json.dumps({"herd": herd.to_dict(), "burst": rows}, indent=1) + "\n"
        )
    if args.json_path:
        try:
            with open(args.json_path, "w") as f:
                json.dump({"herd": herd.to_dict(), "burst": rows}, f, indent=1)
        except OSError as exc:
            print(f"experiments/herd.py: error: cannot write {args.json_path}: {exc.strerror}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
