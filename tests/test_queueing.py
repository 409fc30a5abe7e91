"""The queueing model: closed forms against the textbook figures, the simulation against the closed forms,
and each discipline doing what its definition says."""

from __future__ import annotations

import hashlib
import time

import pytest

from accept_order.analysis.erlang import erlang_c, mm1_sojourn_quantile, mmc_mean_sojourn, mmc_sojourn_quantile
from accept_order.analysis.queueing import DISCIPLINES, Arrivals, Service, SimResult, simulate

# Issue 19: p99 of the sojourn time, mean service 1: one shared queue (M/M/c) vs a uniform hash (N × M/M/1).
FIGURES = [(4, 0.8, 6.89, 23.0), (12, 0.8, 4.84, 23.0), (12, 0.9, 5.77, 46.1)]


@pytest.mark.parametrize(("workers", "rho", "shared", "hashed"), FIGURES)
def test_closed_forms_give_the_issues_figures(workers: int, rho: float, shared: float, hashed: float) -> None:
    assert mmc_sojourn_quantile(workers, rho, 99) == pytest.approx(shared, abs=0.005)
    assert mm1_sojourn_quantile(rho, 99) == pytest.approx(hashed, abs=0.05)


def test_erlang_c_known_values() -> None:
    assert erlang_c(1, 0.8) == pytest.approx(0.8)  # M/M/1: an arrival waits with probability rho
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert mmc_mean_sojourn(1, 0.5) == pytest.approx(2.0)  # M/M/1: S / (1 - rho)


# Seeded, 100k-200k requests: across seeds the simulated p99 lands within ±5% of M/M/c for the shared queue
# and within ±15% of M/M/1 for the hash (its per-worker queues are long and slow to average out); the
# tolerances leave room over that.
@pytest.mark.parametrize(("workers", "rho", "shared", "hashed"), FIGURES)
def test_simulation_meets_the_closed_forms(workers: int, rho: float, shared: float, hashed: float) -> None:
    requests = 200_000 if rho > 0.85 else 100_000
    arrivals = Arrivals.poisson(workers * rho)
    one = simulate(workers, "shared", arrivals, Service.exponential(1), requests, seed=7)
    each = simulate(workers, "hash", arrivals, Service.exponential(1), requests, seed=7)
    assert one.percentile(99) == pytest.approx(mmc_sojourn_quantile(workers, rho, 99), rel=0.08)
    assert each.percentile(99) == pytest.approx(mm1_sojourn_quantile(rho, 99), rel=0.2)
    assert one.mean == pytest.approx(mmc_mean_sojourn(workers, rho), rel=0.05)
    assert each.mean == pytest.approx(1 / (1 - rho), rel=0.15)


def test_closed_loop_little_law() -> None:
    """c clients, N workers, c >= N: a discipline that never idles a worker while one waits (shared,
    favoured, whatever their batch) gives the mean c·S/N, so closed-loop averages come out equal. A hash can
    idle a worker while others queue: in this closed product-form network every placement of the c requests
    is equally likely, so a worker is empty (N-1)/(c+N-1) of the time and the mean is (c+N-1)·S/N."""
    c, n = 32, 4
    service = Service.exponential(1)
    for discipline in ("shared", "favoured"):
        for batch in (1, 0):
            result = simulate(n, discipline, Arrivals.closed(c), service, 50_000, batch=batch, seed=2)
            assert result.mean == pytest.approx(c / n, rel=0.01)
    hashed = simulate(n, "hash", Arrivals.closed(c), service, 50_000, seed=2)
    assert hashed.mean == pytest.approx((c + n - 1) / n, rel=0.03)
    # With a fixed service, round-robin is as regular as the shared queue: every request waits c/N services.
    rr = simulate(n, "round-robin", Arrivals.closed(c), Service.deterministic(1), 10_000, seed=2)
    assert rr.percentile(0) == rr.percentile(100) == pytest.approx(c / n)


def test_batches_widen_the_shared_queue() -> None:
    """A worker that takes every queued connection at once serves them one after another while the others
    may go idle: the same mean, a much wider spread."""
    one = simulate(4, "shared", Arrivals.closed(32), Service.deterministic(1), 20_000, batch=1)
    every = simulate(4, "shared", Arrivals.closed(32), Service.deterministic(1), 20_000, batch=0)
    assert one.stdev == pytest.approx(0, abs=1e-9)
    assert every.percentile(99) > 2 * one.percentile(99)


def test_round_robin_and_favoured_are_what_they_say() -> None:
    """At light load the favoured worker (index 0) finds itself idle for nearly every arrival; round-robin
    gives worker k mod N arrival k whatever it is doing, so exactly equal counts."""
    requests, n = 10_000, 4
    light = Arrivals.fixed(0.2)  # one arrival every 5 services
    favoured = simulate(n, "favoured", light, Service.exponential(1), requests, seed=3)
    turns = simulate(n, "round-robin", light, Service.exponential(1), requests, seed=3)
    assert turns.served == (requests // n,) * n
    assert favoured.served[0] > 0.75 * requests
    assert favoured.served[0] > favoured.served[1] > favoured.served[3]
    # shared wakes the worker that has been idle longest: it spreads like round-robin, not like favoured
    shared = simulate(n, "shared", light, Service.exponential(1), requests, seed=3)
    assert max(shared.served) < 0.3 * requests
    # round-robin queues behind a busy worker while others idle; favoured never does: a longer tail
    busy = Arrivals.poisson(0.6 * n)
    turns = simulate(n, "round-robin", busy, Service.exponential(1), requests, seed=3)
    favoured = simulate(n, "favoured", busy, Service.exponential(1), requests, seed=3)
    assert turns.percentile(99) > 1.5 * favoured.percentile(99)


def test_workers_may_each_have_their_own_service_time() -> None:
    """One worker twice as slow (it gets half a CPU): from one shared queue it takes half as many."""
    both = [Service.deterministic(1), Service.deterministic(2)]
    result = simulate(2, "shared", Arrivals.closed(8), both, 9_000)
    assert result.served[0] == pytest.approx(2 * result.served[1], rel=0.01)
    with pytest.raises(ValueError):
        simulate(3, "shared", Arrivals.closed(8), both, 100)


def test_deterministic_and_seeded() -> None:
    args = (3, "hash", Arrivals.poisson(2.0), Service.empirical([0.5, 1.0, 1.5]), 5_000)
    assert simulate(*args, seed=5) == simulate(*args, seed=5)
    assert simulate(*args, seed=5) != simulate(*args, seed=6)


def _digest(result: SimResult) -> str:
    return hashlib.sha256(repr((result.sojourn, result.served)).encode()).hexdigest()


def test_the_same_seed_gives_the_figures_it_always_gave() -> None:
    """Every discipline, loop, kind of service time and batch, and workers with their own service times: the
    sojourns and counts the simulation gave before its loop was written out in one function (2026-11-27),
    bit for bit. A change to the order of the random draws, a tie broken otherwise or a batch taken otherwise
    changes them."""
    services = [Service.empirical([0.5, 0.75, 1.0, 1.25, 2.0]), Service.exponential(1.0), Service.deterministic(1.0)]
    loops = [Arrivals.closed(9), Arrivals.poisson(2.7), Arrivals.fixed(2.9)]
    each = [
        _digest(simulate(3, discipline, arrivals, service, 3000, batch=batch, seed=11))[:12]
        for discipline in ("shared", "favoured", "hash", "round-robin")  # as they were; `first` came after
        for arrivals in loops
        for service in services
        for batch in (1, 0, 3)
    ]
    assert hashlib.sha256(" ".join(each).encode()).hexdigest() == (
        "4ffa1d93ee5a620dc8ddfdfadc5df17a77144642603912b6c5f2bdf9fba3b8b3"
    )
    mixed = [Service.empirical([0.5, 1.5]), Service.exponential(1.2), Service.deterministic(0.8)]
    result = simulate(3, "shared", Arrivals.poisson(2.0), mixed, 3000, batch=0, seed=4, warmup=0.0)
    assert _digest(result) == "49605c19ba44ba976e8054504f03e203d4aadc4db62027664a853f1d5dc83613"


def test_fast_enough() -> None:
    start = time.process_time()
    simulate(4, "favoured", Arrivals.closed(32), Service.exponential(1), 100_000, batch=4)
    assert time.process_time() - start < 2.0  # about 0.15 s here; CPU time, so a loaded machine does not fail it


@pytest.mark.parametrize(
    "bad",
    [
        dict(workers=0),
        dict(requests=1),
        dict(batch=-1),
        dict(discipline="lifo"),
        dict(discipline="holder", delay=0.0),
        dict(arrivals=Arrivals.closed(0)),
        dict(arrivals=Arrivals.poisson(0)),
    ],
)
def test_bad_arguments(bad: dict[str, object]) -> None:
    args: dict[str, object] = dict(
        workers=2, discipline="shared", arrivals=Arrivals.closed(2), service=Service.deterministic(1), requests=10
    )
    with pytest.raises(ValueError):
        simulate(**(args | bad))  # type: ignore[arg-type]


def test_every_discipline_runs_open_and_closed() -> None:
    for discipline in DISCIPLINES:
        # `first`'s one worker serves them all; so does `holder`'s lock holder, the others waking only once their
        # retry delay is up (500,000 service times by default)
        alone = discipline in ("first", "holder")
        rate = 1 / 3 if alone else 1.0  # what the one worker that serves can take
        for arrivals in (Arrivals.closed(5), Arrivals.poisson(rate), Arrivals.fixed(rate)):
            result = simulate(3, discipline, arrivals, Service.deterministic(1), 1_000)
            # the one worker serves the 5 clients in turn: each waits for the 4 ahead of it
            fastest = 5.0 if alone and arrivals.loop == "closed" else 1.0
            assert len(result.sojourn) == 900 and result.percentile(0) == pytest.approx(fastest)
