"""Seed 000 ("Accept vs Epoll de-queueing order"): the two nc experiments, through the Python API.

The seed started 3 forked workers on one listening socket and ran `for i in `seq 6`; do nc localhost
1024; done` against them, each nc printing the worker that answered:

  blocking-accept.py   workers block in accept()                       seed printed 2 1 0 2 1 0
  epoll-and-accept.py  one epoll per worker with EPOLLEXCLUSIVE, then   seed printed 0 0 0 0 0 0
                       a nonblocking accept()

Here the same two servers are the `accept_order` modes whose mechanism predicts each seed's order
(servers.modes metadata: the FIFO `model` of blocked accept() callers, and the first-registered
`model` of one epoll per worker with EPOLLEXCLUSIVE), i.e. `blocking` and `epoll`; the nc loop is the
harness's sequential client (one connection after the other, each read to EOF), which waits before each
connection until the idle workers are asleep again, as the seed's hand-typed loop did. Each
experiment prints the serving worker per connection, one per line as nc did, then a sentence
comparing the pattern with the seed's. Exit status 0 when both reproduce the seed's pattern, 1 when
one does not, 2 for bad arguments.

Run: .venv/bin/python experiments/nc_order.py [--workers 3] [--connections 6] [--only blocking-accept]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from _cli import OneLineParser, one_line_errors, positive_int  # experiments/_cli.py, beside this script

from accept_order import RunResult, api
from accept_order.analysis.order import is_rotation
from accept_order.core.errors import PlanError
from accept_order.servers.modes import MODES


@dataclass(frozen=True)
class Experiment:
    name: str  # the seed's script name, without .py
    model: str  # the idle order its server's mechanism predicts (a mode's metadata, analysis.order)
    seed_order: tuple[int, ...]  # what the seed's nc loop printed (3 workers, 6 connections)

    @property
    def mode(self) -> str:
        """The mode that serves the way the seed's server did: one shared socket, this order."""
        for name, mode in MODES.items():
            if mode.model == self.model and mode.queue == "shared" and not mode.herds:
                return name
        raise PlanError(f"no accept-order mode predicts the {self.model} order of the seed's {self.name}")


EXPERIMENTS = (
    Experiment("blocking-accept", "fifo", (2, 1, 0, 2, 1, 0)),
    Experiment("epoll-and-accept", "first-registered", (0, 0, 0, 0, 0, 0)),
)


def spaced(values: Sequence[object]) -> str:
    return " ".join(str(v) for v in values)


def compare(exp: Experiment, result: RunResult) -> tuple[bool, str]:
    """(reproduced?, one sentence): the run's order against the seed's published one."""
    order = result.sequence
    workers = result.server.workers
    seed = f"the seed printed {spaced(exp.seed_order)} (3 workers, 6 connections)"
    if result.failed:
        return False, f"{result.failed} connection(s) failed, so the order cannot be set beside what {seed}."
    if MODES[result.mode].model == "fifo":
        used = len(set(order))
        if is_rotation(order, workers) and used == min(workers, len(order)):
            return True, (
                f"Same pattern as the seed: {seed}, a rotation through every worker; here "
                f"{spaced(order)}, also a rotation (blocked accept() callers queue FIFO, so the worker "
                f"idle longest is served next). The rotation starts at worker {order[0]} because that "
                f"worker entered accept() first; the seed's workers evidently queued as 2, 1, 0."
            )
        return False, f"Differs from the seed: {seed}, a rotation; here {spaced(order)} is not one."
    if len(set(order)) == 1:
        first = " (the first-registered one, as in the seed)" if order[0] == 0 else ""
        return True, (
            f"Same as the seed: {seed}; here worker {order[0]}{first} served all {len(order)} connections "
            f"too (EPOLLEXCLUSIVE wakes the first epoll registered on the socket that has a waiter)."
        )
    return False, f"Differs from the seed: {seed}, one worker taking all; here {spaced(order)}."


def run_experiment(exp: Experiment, workers: int, connections: int, host: str) -> bool:
    mode = exp.mode
    result = api.run(mode=mode, workers=workers, connections=connections, host=host)
    plural = "s" if workers != 1 else ""
    print(f"{exp.name}: {workers} worker{plural}, {MODES[mode].summary} (accept-order mode {mode})")
    print(f"$ for i in `seq {connections}`; do nc {host} {result.port}; done")
    for record in result.records:
        print(record.worker if record.served else f"x ({record.error})")
    reproduced, sentence = compare(exp, result)
    print(sentence)
    if result.unsettled:
        print(
            f"note: before {result.unsettled} connection(s) the idle workers were not all asleep yet "
            f"(the machine was busy), which can blur the order."
        )
    return reproduced


def main(argv: Sequence[str] | None = None) -> int:
    parser = OneLineParser(
        prog="nc_order.py", description="Reproduce seed 000's two nc experiments through accept_order."
    )
    parser.add_argument("--workers", "-w", type=positive_int, default=3, help="worker processes (3)")
    parser.add_argument("--connections", "-n", type=positive_int, default=6, help="nc connections (6)")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to listen on (127.0.0.1)")
    parser.add_argument("--only", choices=[e.name for e in EXPERIMENTS], help="run one experiment only")
    args = parser.parse_args(argv)
    reproduced: list[bool] = []
    with one_line_errors("nc_order.py"):
        for exp in EXPERIMENTS:
            if args.only in (None, exp.name):
                if reproduced:
                    print()
                reproduced.append(run_experiment(exp, args.workers, args.connections, args.host))
    return 0 if all(reproduced) else 1


if __name__ == "__main__":
    sys.exit(main())
