"""observe's load verdict names, first among the causes, a worker's connections that closed while observed: an
h2load of 8 connections on one nginx worker (TLS, HTTP/2) ended 2 s into a 6 s window while another h2load's 8
went on over two others, and observe said 'worker 0 held 8 of the 16 connections seen (50%; an even share is
25%) but received 14% of the bytes: on average each of its connections carried less than the others' (idler, or
slower clients, or a worker answering each more slowly as it holds more)', of a worker that held none of them at
its end (ss -tanp: the 8 left on the other two). Where its share of closed connections is no larger than the
others', nothing is added."""

from __future__ import annotations

from dataclasses import replace

from test_observe_verdict_load import observed

from accept_order.experiments.observe.verdict import verdict


def with_held(held: list[int], **figures: list[int]) -> list[str]:
    result = observed(figures["accepts"], figures["seen"], figures["bytes_in"], accepted_seen=sum(figures["seen"]))
    workers = tuple(replace(w, connections_held=held[i]) for i, w in enumerate(result.workers))
    return verdict(replace(result, workers=workers))


def test_a_worker_whose_connections_closed_is_said_so_first() -> None:
    said = with_held([0, 3, 5, 0], accepts=[8, 3, 5, 0], seen=[8, 3, 5, 0], bytes_in=[677_400, 1_600_000, 2_700_000, 0])
    line = next(line for line in said if line.startswith("worker 0 held 8 of the 16 connections seen"))
    assert line.endswith(
        "(8 of its 8 closed while observed, carrying bytes for part of the window only; or idler, or slower "
        "clients, or a worker answering each more slowly as it holds more)"
    ), line


def test_closes_shared_alike_add_nothing() -> None:
    said = with_held(
        [4, 2, 2, 0], accepts=[8, 4, 4, 0], seen=[8, 4, 4, 0], bytes_in=[1_000_000, 1_500_000, 1_500_000, 0]
    )
    line = next(line for line in said if line.startswith("worker 0 held 8 of the 16 connections seen"))
    assert line.endswith("(idler, or slower clients, or a worker answering each more slowly as it holds more)"), line


def test_the_others_connections_closing_is_said_of_the_worker_that_carried_more() -> None:
    """nginx, two h2loads of 6 connections (TLS, HTTP/2): the one on workers 0-2 ended 3.5 s into a 7 s window while
    the other's 6 on worker 3 went on (ss -tanp: 6 left, all worker 3's; h2load: 181,721 and 327,810 requests)."""
    said = with_held(
        [0, 0, 0, 6], accepts=[0, 0, 0, 0], seen=[3, 1, 2, 6], bytes_in=[554_300, 416_100, 603_800, 4_800_000]
    )
    line = next(line for line in said if line.startswith("worker 3 held 6 of the 12 connections seen"))
    assert line.endswith(
        "(6 of the others' 6 closed while observed, carrying bytes for part of the window only; or busier, or "
        "faster clients)"
    ), line


def test_the_others_closing_no_more_than_its_own_adds_nothing() -> None:
    """Half of each side's connections closed: the closes do not tell them apart."""
    said = with_held(
        [1, 1, 1, 3], accepts=[0, 0, 0, 0], seen=[2, 2, 2, 6], bytes_in=[300_000, 300_000, 300_000, 4_800_000]
    )
    line = next(line for line in said if line.startswith("worker 3 held 6 of the 12 connections seen"))
    assert line.endswith("(busier, or faster clients)"), line
