"""observe's load verdict named only the clients as the cause of a worker's connections carrying less each
('idler, or slower clients'), where the worker holding more connections than an even share answers each
of them less often: a client of a pool (wrk, a proxy) sends its next request once answered, so what a
connection carries is what its worker gives it. The how-to's own run (docs/howto/behind-a-proxy.md, nginx, 4
workers, wrk -c6) is one: worker 1 held 3 of the 6 connections and each carried 57,903 requests against
84,416-84,930 on the others' one. The verdict now names the worker too, where it holds more (or, for
connections that carried more each, fewer) than an even share; not where its share is even."""

from __future__ import annotations

from test_observe_verdict_load import observed

from accept_order.experiments.observe.verdict import verdict

WORKER_SIDE = "or a worker answering each more slowly as it holds more"


def test_a_worker_holding_more_connections_is_named_beside_the_clients() -> None:
    """The how-to's wrk -c6: 1, 3, 1 and 1 connections, 20%, 40%, 20% and 20% of the bytes."""
    said = verdict(observed([1, 4, 1, 1], [1, 3, 1, 1], [3_340_000, 6_720_000, 3_330_000, 3_330_000], accepted_seen=6))
    line = next(line for line in said if line.startswith("worker 1 held 3 of the 6"))
    assert line.endswith(f"(idler, or slower clients, {WORKER_SIDE})"), line


def test_a_worker_holding_fewer_connections_that_carried_more_each() -> None:
    said = verdict(observed([5, 5, 5, 1], [5, 5, 5, 1], [100_000, 100_000, 100_000, 400_000], accepted_seen=16))
    line = next(line for line in said if line.startswith("worker 3 held 1 of the 16"))
    assert line.endswith("(busier, or faster clients, or a worker answering each sooner as it holds fewer)"), line


def test_an_even_hold_leaves_the_worker_out() -> None:
    said = verdict(observed([10, 10, 10, 10], [10, 10, 10, 10], [100_000, 100_000, 100_000, 700_000], accepted_seen=40))
    line = next(line for line in said if line.startswith("worker 3 held 10 of the 40"))
    assert line.endswith("(busier, or faster clients)"), line


def test_one_empty_accept_is_one_accept() -> None:
    """uvicorn under wrk: '1 accepts came back empty (EAGAIN, 0.14 per connection)'."""
    from dataclasses import replace

    from accept_order.experiments.observe.verdict import kernel

    result = observed([3, 1, 3], [3, 0, 3], [700_000, 0, 600_000], accepted_seen=6)
    one = replace(result, workers=tuple(replace(w, empty=1 if w.index == 2 else 0) for w in result.workers))
    assert any(line.startswith("1 accept came back empty (EAGAIN, 0.14 per connection)") for line in kernel(one))
    many = replace(result, workers=tuple(replace(w, empty=1500) for w in result.workers))
    assert any(line.startswith("4,500 accepts came back empty") for line in kernel(many))
