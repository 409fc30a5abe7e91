"""The pinned discipline (analysis/pinned.py): long-lived connections, each request queued at the worker that
holds its connection. Its closed forms and its simulated workers against an independent event simulation of
every connection (written here, sharing nothing with analysis/queueing.py), and the cases users report: two
connections on three workers (envoy#33707), a proxy's pool of 32 over 4 workers."""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Callable, Sequence

import pytest

from accept_order.analysis.pinned import pinned, request_shares
from accept_order.analysis.queueing import Arrivals, Service

Draw = Callable[[random.Random], float]


def exponential(mean: float) -> Draw:
    return lambda rng: rng.expovariate(1 / mean)


def witness(
    connections: Sequence[int], draws: Sequence[Draw], requests: int, rate: float | None = None, seed: int = 11
) -> tuple[list[list[float]], list[int]]:
    """Every connection a customer of the worker that holds it: a closed loop (its next request the moment
    its reply ends) or Poisson arrivals at `rate`, each on a connection chosen evenly. After the first tenth
    of the completions: each worker's sojourn times, and how many requests each served in that same window."""
    rng = random.Random(seed)
    owner = [w for w, n in enumerate(connections) for _ in range(n)]
    waiting: list[deque[tuple[float, int]]] = [deque() for _ in connections]
    busy = [False] * len(connections)
    events: list[tuple[float, int, int, float]] = []  # (time, order, connection, arrival; -1: an arrival event)
    order = 0
    sojourn: list[list[float]] = [[] for _ in connections]
    served = [0] * len(connections)
    warm, done = requests // 10, 0

    def push(at: float, conn: int, arrived: float) -> None:
        nonlocal order
        order += 1
        heapq.heappush(events, (at, order, conn, arrived))

    def arrive(at: float, conn: int) -> None:
        w = owner[conn]
        if busy[w]:
            waiting[w].append((at, conn))
        else:
            busy[w] = True
            push(at + draws[w](rng), conn, at)

    if rate is None:
        for conn in range(len(owner)):
            arrive(0.0, conn)
    else:
        push(rng.expovariate(rate), -1, -1.0)
    while done < requests:
        now, _, conn, arrived = heapq.heappop(events)
        if conn < 0:  # the open loop's next arrival
            arrive(now, int(rng.random() * len(owner)))
            push(now + rng.expovariate(rate or 1), -1, -1.0)
            continue
        w = owner[conn]
        done += 1
        if done > warm:
            sojourn[w].append(now - arrived)
            served[w] += 1
        if waiting[w]:
            at, nxt = waiting[w].popleft()
            push(now + draws[w](rng), nxt, at)
        else:
            busy[w] = False
        if rate is None:
            arrive(now, conn)
    return [sorted(s) for s in sojourn], served


def rank(values: list[float], q: float) -> float:
    return values[max(1, math.ceil(q * len(values) / 100)) - 1]


def mixture(each: list[list[float]], q: float) -> float:
    return rank(sorted(v for s in each for v in s), q)


def test_envoy_two_connections_on_three_workers() -> None:
    """envoy#33707: in 30% of runs one worker took both connections. Its requests wait for each other: every
    one takes 2 services, and that worker serves them all; one connection each, every request takes 1."""
    one = Service.deterministic(1.0)
    both = pinned((2, 0, 0), one, Arrivals.closed(2))
    assert both.shares == (1.0, 0.0, 0.0) and both.exact
    assert both.p50 == both.p99 == both.workers[0].p50 == 2.0
    assert both.workers[1].p50 is None and both.workers[2].share == 0
    apart = pinned((1, 1, 0), one, Arrivals.closed(2))
    assert apart.shares == (0.5, 0.5, 0.0) and apart.p50 == apart.p99 == 1.0
    # exponential service: the sum of two (Erlang 2), median 1.678 services, against one service's 0.693
    spread = pinned((2, 0, 0), Service.exponential(1.0), Arrivals.closed(2))
    assert spread.p50 == pytest.approx(1.67835, abs=1e-4) and spread.mean == pytest.approx(2.0)
    assert pinned((1, 1, 0), Service.exponential(1.0), Arrivals.closed(2)).p50 == pytest.approx(math.log(2))


def test_a_pool_of_32_over_4_workers_even_or_all_on_one() -> None:
    """A proxy's 32 connections split (9, 8, 8, 7) or all accepted by one worker (32, 0, 0, 0). Each worker
    that holds any is always busy, so the busy ones split the requests evenly, not 9/32 to 7/32."""
    one = Service.deterministic(1.0)
    even = pinned((9, 8, 8, 7), one, Arrivals.closed(32))
    assert even.shares == (0.25, 0.25, 0.25, 0.25)
    assert [w.p50 for w in even.workers] == [9.0, 8.0, 8.0, 7.0]
    assert even.p50 == 8.0 and even.p99 == 9.0 and even.min == 7.0 and even.mean == pytest.approx(8.0)
    # a connection on the 7-connection worker makes 9/7 the requests of one on the 9-connection worker
    per_connection = [w.share / w.connections for w in even.workers]
    assert per_connection[3] / per_connection[0] == pytest.approx(9 / 7)
    all_on_one = pinned((32, 0, 0, 0), one, Arrivals.closed(32))
    assert all_on_one.shares == (1.0, 0.0, 0.0, 0.0) and all_on_one.p50 == all_on_one.p99 == 32.0
    # what a shared queue of 4 would give 32 clients: the mean C·S/N = 8 (Little), the even pool's
    assert all_on_one.mean == pytest.approx(4 * even.mean)


@pytest.mark.parametrize("connections", [(9, 8, 8, 7), (2, 0, 0), (5, 1, 0, 3)])
def test_the_closed_forms_meet_an_independent_simulation(connections: tuple[int, ...]) -> None:
    """Exponential service, closed loop: each worker's Erlang(n) and the request split X_w = 1/E[S] against an
    event simulation of every connection. Over 8 seeds its p50 and p99 landed within 1.5% of the closed forms,
    its shares within 0.004; the tolerances leave room over that."""
    exact = pinned(connections, Service.exponential(1.0), Arrivals.closed(sum(connections)))
    assert exact.exact and exact.simulated == 0
    each, served = witness(connections, [exponential(1.0)] * len(connections), 200_000)
    for w, n in enumerate(connections):
        assert served[w] / sum(served) == pytest.approx(exact.shares[w], abs=0.01)
        if n:
            assert rank(each[w], 50) == pytest.approx(exact.workers[w].p50, rel=0.04)
            assert rank(each[w], 99) == pytest.approx(exact.workers[w].p99, rel=0.06)
    assert mixture(each, 99) == pytest.approx(exact.p99, rel=0.06)
    assert mixture(each, 50) == pytest.approx(exact.p50, rel=0.04)


def test_workers_of_different_speeds_split_by_their_throughput() -> None:
    """A worker twice as slow (half a CPU) with the same connections serves half as many requests, and its
    requests take twice as long: the split follows 1/E[S], whatever the connections."""
    services = [Service.exponential(1.0), Service.exponential(2.0), Service.exponential(1.0)]
    exact = pinned((4, 4, 1), services, Arrivals.closed(9))
    assert exact.shares == pytest.approx((0.4, 0.2, 0.4))
    each, served = witness((4, 4, 1), [exponential(1.0), exponential(2.0), exponential(1.0)], 200_000)
    assert [s / sum(served) for s in served] == pytest.approx(exact.shares, abs=0.01)
    assert rank(each[1], 50) == pytest.approx(exact.workers[1].p50, rel=0.04)
    assert exact.workers[1].mean == pytest.approx(8.0) and exact.workers[2].mean == pytest.approx(1.0)
    # the overall figures weigh each worker by the requests it serves, not one worker one vote
    assert mixture(each, 50) == pytest.approx(exact.p50, rel=0.04)
    assert mixture(each, 99) == pytest.approx(exact.p99, rel=0.06)
    fixed = pinned((1, 1), [Service.deterministic(1.0), Service.deterministic(2.0)], Arrivals.closed(2))
    assert fixed.shares == pytest.approx((2 / 3, 1 / 3)) and fixed.mean == pytest.approx(4 / 3)


def test_an_empirical_service_is_simulated_and_meets_the_witness() -> None:
    """A service time drawn from a sample has no closed form here: each worker's own queue is simulated
    (seeded). Every request still waits for n-1 others: a sum of n draws."""
    sample = [0.5, 1.0, 1.5, 3.0]
    got = pinned((9, 8, 8, 7), Service.empirical(sample), Arrivals.closed(32), requests=100_000, seed=3)
    assert not got.exact and got.simulated >= 100_000
    assert got.mean == pytest.approx(8 * 1.5, rel=0.02)  # n·E[S] each, a quarter of the requests each
    draws: list[Draw] = [lambda rng: sample[int(rng.random() * 4)]] * 4
    each, served = witness((9, 8, 8, 7), draws, 200_000)
    assert [s / sum(served) for s in served] == pytest.approx(got.shares, abs=0.01)
    assert mixture(each, 50) == pytest.approx(got.p50, rel=0.04)
    assert mixture(each, 99) == pytest.approx(got.p99, rel=0.06)
    assert got == pinned((9, 8, 8, 7), Service.empirical(sample), Arrivals.closed(32), requests=100_000, seed=3)


def test_a_simulated_worker_is_measured_past_its_first_cycle() -> None:
    """3,000 connections on one worker, few requests asked: the first 3,000 all arrive at once and take 1 to
    3,000 services; from then on each waits for the 2,999 before it. Only that steady state is measured."""
    got = pinned((3000, 0), Service.empirical([0.5, 1.0, 1.5]), Arrivals.closed(3000), requests=5_000)
    assert got.mean == pytest.approx(3000, rel=0.01) and got.min > 0.95 * 3000
    assert got.simulated >= 20 * 3000


def test_an_open_loop_feeds_each_worker_its_connections_share() -> None:
    """Poisson at 2 per service over 32 connections: worker w is an M/M/1 queue at 2·n_w/32 (exact), and
    serves n_w/32 of the requests."""
    got = pinned((9, 8, 8, 7), Service.exponential(1.0), Arrivals.poisson(2.0))
    assert got.exact and got.shares == pytest.approx((9 / 32, 8 / 32, 8 / 32, 7 / 32))
    rho = 2.0 * 9 / 32
    assert got.workers[0].utilisation == pytest.approx(rho)
    assert got.workers[0].p99 == pytest.approx(-math.log(0.01) / (1 - rho))  # M/M/1's sojourn: Exp(μ - λ)
    each, served = witness((9, 8, 8, 7), [exponential(1.0)] * 4, 200_000, rate=2.0)  # p99s within 4.5% over 8 seeds
    assert [s / sum(served) for s in served] == pytest.approx(got.shares, abs=0.01)
    assert rank(each[0], 99) == pytest.approx(got.workers[0].p99, rel=0.08)
    assert mixture(each, 99) == pytest.approx(got.p99, rel=0.08)
    # a fixed service at fixed intervals below capacity never waits
    regular = pinned((9, 8, 8, 7), Service.deterministic(1.0), Arrivals.fixed(2.0))
    assert regular.exact and regular.p50 == regular.p99 == 1.0


def test_an_open_loop_worker_offered_more_than_it_serves_grows_its_queue_over_the_run() -> None:
    """All 4 connections on one worker at 1.5 requests per service: ρ 1.5, the queue grows by half a request
    per service through the run, so the run's own length (every request measured) sets its latencies."""
    short = pinned((4, 0), Service.deterministic(1.0), Arrivals.fixed(1.5), length=1_000)
    long = pinned((4, 0), Service.deterministic(1.0), Arrivals.fixed(1.5), length=4_000)
    assert short.workers[0].utilisation == pytest.approx(1.5) and not short.exact
    # the last of k requests waits k/3 services: the p99 of 1,000 about 330, of 4,000 four times that
    assert short.p99 == pytest.approx(0.99 * 1_000 / 3, rel=0.02) and long.p99 == pytest.approx(4 * short.p99, rel=0.02)
    assert short.min == pytest.approx(1.0)  # the first found the worker idle


def test_request_shares_alone() -> None:
    assert request_shares((3, 0, 1), (1.0, 1.0, 1.0), Arrivals.closed(4)) == (0.5, 0.0, 0.5)
    assert request_shares((3, 0, 1), (1.0, 1.0, 1.0), Arrivals.poisson(1.0)) == (0.75, 0.0, 0.25)


def test_thousands_of_connections_on_one_worker_are_exact_and_quick() -> None:
    """4,000 clients all on one worker: Erlang(4000) has mean 4,000 services and deviation 63."""
    got = pinned((4000, 0), Service.exponential(1.0), Arrivals.closed(4000))
    assert got.p50 == pytest.approx(4000 - 1 / 3, abs=0.01)  # Erlang's median: n - 1/3 for large n
    assert got.stdev == pytest.approx(math.sqrt(4000))


@pytest.mark.parametrize(
    "bad",
    [
        dict(connections=()),
        dict(connections=(0, 0)),
        dict(connections=(2, -1)),
        dict(arrivals=Arrivals.closed(3)),  # 2 held, 3 clients
        dict(arrivals=Arrivals("poisson", rate=0.0)),
        dict(service=[Service.deterministic(1.0)] * 3),
        dict(requests=1),
    ],
)
def test_bad_arguments(bad: dict[str, object]) -> None:
    args: dict[str, object] = dict(
        connections=(1, 1), service=Service.deterministic(1.0), arrivals=Arrivals.closed(2), requests=10
    )
    with pytest.raises(ValueError):
        pinned(**(args | bad))
