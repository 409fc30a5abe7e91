"""io-uring's full ring hands connections on only to those that arrive after it filled.

A multishot accept whose ring's completions are full ends (the connection that found them full rides on the last
completion); the connections still queued in the listener then wake nobody, and the next armed worker is woken only by
a connection that arrives later. Its worker reaps and arms again, and its new accept takes the queue at once. So a
burst is handed on only where 129 pile up in the first ring before its worker reaps while more still arrive:
`burst --modes io-uring -w 2 --clients 500` read 500/0, 345/155, 500/0, 181/319, 387/113 and 291/209 (load 6), and
bpftrace (io_uring_complete and io_uring_cqe_overflow per worker) matched the replies each time, among them a 500/0
whose worker 0 had its accept end twice on a full ring (two completions without IORING_CQE_F_MORE) and still took all
500. The model (analysis/queueing.py's `first`) handed a burst all at once over as 260/240; the burst report said
nothing of why one burst split and the next did not. The file is the first of those runs (387/113)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

from accept_order.analysis.queueing import Arrivals, Service, simulate
from accept_order.experiments.latency.model_report import FIRST_NOTE
from accept_order.servers.modes import MODES

DATA = Path(__file__).parent / "data"
RACE = "a race the machine decides: one burst's split is one of both outcomes"


def test_a_burst_all_at_once_stays_with_the_first_worker() -> None:
    """500 at the same instant: the first ring fills with the 130th and the other 370 wait in the listener's queue,
    waking nobody; worker 0 takes them when it arms again."""
    for service in (1e-6, 1.0):
        burst = simulate(2, "first", Arrivals.closed(500), Service.deterministic(service), 500, warmup=0, ring=128)
        assert burst.served == (500, 0)


def test_arrivals_that_go_on_after_the_ring_filled_are_handed_on() -> None:
    """Two a unit of time against a service of 1: worker 0 falls behind, its ring fills, and the connections that
    arrive after that go to worker 1. One every 2 units: worker 0 keeps up, its ring never fills."""
    spread = simulate(2, "first", Arrivals.fixed(2.0), Service.deterministic(1.0), 500, warmup=0, ring=128)
    assert spread.served[1] > 50 and sum(spread.served) == 500
    slow = simulate(2, "first", Arrivals.fixed(0.5), Service.deterministic(1.0), 500, warmup=0, ring=128)
    assert slow.served == (500, 0)


def test_a_closed_loop_past_the_ring_still_shares() -> None:
    """200 clients: each one's next connection arrives after a ring filled, so the two workers share the load."""
    loop = simulate(2, "first", Arrivals.closed(200), Service.deterministic(1.0), 20_000, ring=128)
    assert min(loop.served) > 0.4 * 20_000


def _shown(tmp_path: Path, mode: str = "io-uring", clients: int = 500) -> str:
    doc = json.loads((DATA / "burst_io_uring_500.json").read_text())
    doc["runs"][0]["server"]["mode"] = mode
    doc["runs"][0]["cells"][0]["clients"] = clients
    path = tmp_path / "burst.json"
    path.write_text(json.dumps(doc))
    return " ".join(run_cli(["show", str(path)], 1000).stdout.split())


def test_the_burst_report_says_what_decides_the_split(tmp_path: Path) -> None:
    out = _shown(tmp_path)
    assert (
        "io-uring (500: 387/113): the first armed worker's ring takes every connection until 129 wait in it unreaped; "
        "the connections queued then wake nobody, and only one arriving after that wakes the next worker, whose "
        "accept takes them too (with none arriving, they wait for the first to reap and arm again)" in out
    )
    assert RACE in out


def test_no_such_note_for_another_mode_or_a_burst_the_ring_holds(tmp_path: Path) -> None:
    assert RACE not in _shown(tmp_path, mode="epoll")
    assert RACE not in _shown(tmp_path, clients=129)
    assert RACE in _shown(tmp_path, clients=130)


def test_over_kept_connections_the_note_splits_connections_not_requests() -> None:
    """200 clients x 5 requests: the note's split is of the connections each worker accepted (200/0), not the
    requests they carried (1000/0), which the served counts are then."""
    out = " ".join(run_cli(["show", str(DATA / "burst_io_uring_kept.json")], 1000).stdout.split())
    assert "io-uring (200: 200/0): the first armed worker's ring" in out


def test_what_the_model_does_with_the_queued_ones_is_what_is_said() -> None:
    """The connections queued when a ring filled wake nobody, and the next arrival's wakeup has the next worker's accept
    take them too (io_uring's accept goes on while the socket holds more; queueing.py's `first` does the same). The
    mode's why, the latency model's note and the burst note said they waited for the first worker to arm again."""
    assert "that wakeup's accept, or the first's arming again, takes them" in FIRST_NOTE
    assert "one arriving after that wakes the next armed worker, whose accept takes them too" in MODES["io-uring"].why
