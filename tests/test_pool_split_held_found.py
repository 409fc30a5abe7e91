"""An attached pool whose replies name no worker and whose accepts the kernel did not count (bpftrace off PATH, as
a user has it) gets its split judged on the holders the client found after the fill (loads/kept_owners.py), said
as such; where the kernel counted, its accepts stay the split's, said as the kernel's.

Debian's nginx (4 workers) 'latency --attach --protocol http --pool -c 40 --requests-per-connection 0 -n 4000'
without bpftrace showed the holders in its kept table (7b01ea7) but gave no verdict on the split: the verdict
(experiments/latency/pool_split.py, kept_tail.py) read the kernel's accepts alone. nginx's access log ($pid and
$connection per request) is the witness of which worker held each connection.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from conftest import run_cli
from nginx_by_hand import nginx_by_hand, one_server_conf

from accept_order.analysis.chance import how_often, uniform_spread_p
from accept_order.core.load_summary import ServerCloses
from accept_order.experiments.latency.kept_tail import kept_tail_verdict
from accept_order.experiments.latency.pool_split import HELD, KERNEL, split_of
from accept_order.experiments.latency.result import LatencyResult

TIMEOUT_S = 20.0
DATA = Path(__file__).parent / "data"
NGINX = one_server_conf("$pid $connection $connection_requests")


def test_an_attached_pool_without_bpftrace_is_judged_on_the_holders_nginx_logged(
    free_port: int, tmp_path: Path
) -> None:
    no_bpftrace = tmp_path / "bin"  # a PATH with no bpftrace on it: the kernel's accepts are not counted
    no_bpftrace.mkdir()
    out = tmp_path / "pool.json"
    with nginx_by_hand(NGINX, free_port, 4, TIMEOUT_S) as nginx:
        result = run_cli(
            [
                *("latency", "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http"),
                *("--pool", "-c", "40", "--requests-per-connection", "0", "-n", "4000", "--json", str(out)),
            ],
            extra_env={"PATH": str(no_bpftrace)},
        )
        logged = [line.split() for line in nginx.access_log.read_text().splitlines()]
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    assert not document["evidence"]["accept_counts"]["available"], document["evidence"]
    # the witness: each connection nginx served (its pid and $connection), counted per worker in the file's order
    assert len(logged) == 4000, len(logged)
    connections = {(pid, number) for pid, number, _ in logged}
    assert len(connections) == 40, connections  # none reopened: every one kept for the whole run
    pids = [c["pid"] for c in sorted(document["counters"], key=lambda c: c["index"])]
    held = [sum(1 for pid, _ in connections if pid == str(worker)) for worker in pids]
    split = "/".join(map(str, held))
    said = " ".join(result.stdout.split())
    assert f"the split {split} ({HELD}; Jain " in said, said
    # the same chance test as the kernel's counts get, over the split nginx logged
    p, test = uniform_spread_p(held)
    assert f"spreads 40 at least this unevenly {how_often(p)}, {test} test" in said, said
    assert KERNEL not in said, said


def test_the_kernels_accepts_stay_the_split_where_it_counted() -> None:
    """The holders and the kernel's accepts both known: the kernel's are the split (said as its), and where they
    are more than the pool (connections reopened) there is no split, as before, not the holders'."""
    found = LatencyResult.from_dict(json.loads((DATA / "attached_nginx_pool_no_bpftrace.json").read_text()))
    held = split_of(found)
    assert held is not None and held.counts == (17, 1, 17, 5) and held.source == HELD, held
    kernel = {"accept_counts": {"available": True}}  # the kernel's accepts in served, as an attached run has them
    counted = dataclasses.replace(found, served=(10, 10, 10, 10), evidence=found.evidence | kernel)
    by_kernel = split_of(counted)
    assert by_kernel is not None and by_kernel.counts == (10, 10, 10, 10) and by_kernel.source == KERNEL, by_kernel
    reopened = dataclasses.replace(counted, served=(20, 20, 20, 20))
    assert split_of(reopened) is None
    said = kept_tail_verdict(reopened)
    assert said is not None and said.startswith("No verdict on the pool's split: its workers accepted 80"), said


def test_one_worker_found_holding_the_whole_pool_has_its_p99_said() -> None:
    """Holders found: each one's requests were timed, so one worker holding all 40 is said with its p99, not as
    a run whose replies and kernel left every worker's p99 unknown."""
    found = LatencyResult.from_dict(json.loads((DATA / "attached_nginx_pool_no_bpftrace.json").read_text()))
    alone = dataclasses.replace(found, connections=(40, 0, 0, 0))
    said = kept_tail_verdict(alone)
    assert said is not None and "Worker 0 alone held the pool: its p99 is the run's" in said, said
    assert "No worker's p99 is known" not in said, said


def test_show_does_not_call_served_unknown_beside_the_holders_requests() -> None:
    """`show` of the run whose holders were found: the served column's footnote says why it is '-' and points at the
    kept table's requests per holder (4,000 of 4,000 placed there), not 'served per worker: not known'."""
    shown = run_cli(["show", str(DATA / "attached_nginx_pool_no_bpftrace.json")])
    assert shown.exit_code == 0, shown.stderr
    said = " ".join(shown.stdout.split())
    assert "requests, p50, p99: 4,000 of the 4,000 requests" in said, said  # the kept table places every one
    assert "served per worker: not known" not in said, said
    assert "served per worker: '-' in its served column: the replies do not name a worker" in said, said
    assert "the kept connections per worker table gives the requests over the pool's connections" in said, said


def test_a_pool_whose_holders_are_not_the_whole_run_says_why_it_has_no_split() -> None:
    """Holders found but the server ended pool connections (others took their place: nginx's keepalive_requests)
    or only part of the pool's holders found: no split, and the verdict says why, as the kernel's accepts do."""
    found = LatencyResult.from_dict(json.loads((DATA / "attached_nginx_pool_no_bpftrace.json").read_text()))
    closed = dataclasses.replace(found, server_closes=ServerCloses(told=(17, 1, 17, 5)))
    assert split_of(closed) is None
    said = kept_tail_verdict(closed)
    assert said is not None and said.startswith("No verdict on the pool's split: the server ended 40 of the "), said
    assert "the holders it found once the pool was filled are not who held what to the end" in said, said
    part = dataclasses.replace(found, connections=(17, 1, 17, 4))
    assert split_of(part) is None
    said = kept_tail_verdict(part)
    assert said is not None and "the client found who held only 39 of the pool's 40 connections" in said, said
    assert kept_tail_verdict(found) is not None and split_of(found) is not None  # the whole pool: its split, as above


def test_one_worker_holding_the_pool_the_kernel_counted_has_its_p99_said() -> None:
    """The kernel's accepts and the holders both found (bpftrace on PATH: the client still finds each connection's
    holder, and times its requests for that worker): one worker that accepted all 40 is said with its p99, not as
    'No worker's p99 is known ... the kernel counted only each one's accepts'."""
    found = LatencyResult.from_dict(json.loads((DATA / "attached_nginx_pool_no_bpftrace.json").read_text()))
    kernel = {"accept_counts": {"available": True}}
    alone = dataclasses.replace(found, served=(40, 0, 0, 0), evidence=found.evidence | kernel)
    said = kept_tail_verdict(alone)
    assert said is not None and f"({KERNEL}; Jain " in said, said
    assert "Worker 0 alone held the pool: its p99 is the run's" in said, said
    assert "No worker's p99 is known" not in said, said
