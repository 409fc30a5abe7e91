"""The fill verdict (experiments/latency/first_requests.py): whether a kept run's tail is its connections' first
requests, said true of what was measured.

With --requests-per-connection 2, half of all requests are first ones, so a tail of first requests cannot be twice
their share: nginx (4 workers, -c 100, 6,000 requests; load 3, Linux 6.18, 2 vCPUs) read 'The tail is the steady
state, not the fill: 51 of the 60 slowest requests ... were connections' first requests (50.5% of all requests)',
first p99 31.21 ms against 16.65 ms for the later ones. Connections opened throughout the run have no fill: their
first requests' wait to be accepted is the steady state's own. The cure it names is a thing to try, not a finding;
a pool reopened is not said filled one at a time; a short run's tail is said as the share it is.
"""

from __future__ import annotations

import dataclasses

from test_kept_first_requests import _kept, _with_fill

from accept_order.core.first_requests import FirstRequests
from accept_order.core.histogram import LatencyHistogram
from accept_order.experiments.latency.first_requests import fill_verdict
from accept_order.experiments.latency.result import LatencyResult


def _split(per_connection: int, firsts: dict[int, int], later: dict[int, int]) -> LatencyResult:
    """A run of `per_connection` requests a connection whose first requests' durations are `firsts` (µs -> count)
    and its later ones' `later`."""
    every, first = LatencyHistogram(), LatencyHistogram()
    for us, n in firsts.items():
        first.add(us, n)
        every.add(us, n)
    for us, n in later.items():
        every.add(us, n)
    return dataclasses.replace(
        _kept(per_connection, pool=False), histogram=every, first_requests=FirstRequests(first, ())
    )


def test_a_tail_mostly_of_first_requests_at_two_a_connection_is_theirs_not_the_steady_state() -> None:
    # 3,000 connections of 2 requests: 51 of the 60 slowest are first requests, where half of all are
    result = _split(2, {1000: 2949, 9000: 51}, {1000: 2991, 9500: 9})
    said = fill_verdict(result) or ""
    assert not said.startswith("The tail is the steady state"), said
    assert said.startswith(
        "The tail is the connections' first requests, not the later ones: 51 of the 60 slowest requests"
    ), said
    assert "Each connection carried 2 requests, so connections were opened throughout the run" in said, said
    assert "(the 3,000 first requests: p99 9.00 ms" in said and "(beyond chance)" in said, said


def test_first_requests_beyond_their_share_but_under_half_the_tail_are_partly_it() -> None:
    # 10,000 connections of 3 requests: 140 of the 300 slowest are first requests (46.7%), a third of all are
    result = _split(3, {1000: 9860, 9000: 140}, {1000: 19840, 9500: 160})
    said = fill_verdict(result) or ""
    assert said.startswith("The tail is partly the connections' first requests: 140 of the 300 slowest"), said
    assert "1.4 times their share of all requests (33.3%)" in said, said


def test_a_fill_names_the_accept_batch_as_a_thing_to_try_not_as_measured() -> None:
    said = fill_verdict(_with_fill(_kept(0, pool=False), 4_000_000, 25)) or ""
    assert said.startswith("The tail is the fill, not the steady state: 100 of the 100 slowest"), said
    assert "so they could queue on the listener" in said and "may shorten that wait" in said, said
    assert "this run did not measure that" in said and "the same run with --accept-batch 0 tells" in said, said
    assert "queued on the listener" not in said and "shortens that wait" not in said, said


def test_a_pool_reopened_where_the_kernel_did_not_count_is_not_said_filled_one_at_a_time() -> None:
    """An attached pool of 100 (no bpftrace: accepts not counted) whose server closed every connection once: 200
    first requests, so the pool did not open them all one after another in its fill."""
    pooled = _with_fill(_kept(0, pool=True), 4_000_000, 50)  # 200 first requests for a pool of 100
    attached = dataclasses.replace(
        pooled,
        server=pooled.server.replace(attach=(1,)),
        evidence={"accept_counts": {"available": False, "why": "bpftrace not found on PATH", "counts": {}}},
    )
    said = fill_verdict(attached) or ""
    assert said.startswith("The tail is the fill"), said
    assert "one after another" not in said, said


def test_the_tail_of_a_short_run_is_said_as_the_share_it_is() -> None:
    """The tail is the slowest 1%, but at least one request: of 40, the one slowest is 2.5% of all, not '1%'."""
    said = fill_verdict(_split(2, {1000: 19, 9000: 1}, {1000: 20})) or ""
    assert "the 1 slowest request (2.5% of all, 9.00 ms and more)" in said, said
    said = fill_verdict(_split(2, {1000: 2949, 9000: 51}, {1000: 2991, 9500: 9})) or ""
    assert "the 60 slowest requests (1% of all, 9.00 ms and more)" in said, said
