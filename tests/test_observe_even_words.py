"""observe of a gunicorn of 2 workers (their 24 connections 7 and 17, bpftrace's count) said 'the 2 workers shared
24 connections evenly: 29% to 71% each (exact multinomial test: ... 1 time in 16)': a split chance cannot be told
from is not an even one. Shares more than 10 points apart are said as the busiest-worker line says a split chance
allows ('as uneven as chance'); shares within 10 points are still 'evenly'."""

from __future__ import annotations

from observe_result_made import result

from accept_order.experiments.observe.verdict import headline


def test_a_split_chance_allows_is_not_called_even() -> None:
    said = headline(result([7, 17]))
    assert " evenly" not in said and said.startswith("the 2 workers shared 24 connections: 29% to 71% each"), said
    assert "(as uneven as chance: exact multinomial test:" in said, said


def test_shares_within_ten_points_are_even() -> None:
    assert headline(result([34, 33, 33])).startswith("the 3 workers shared 100 connections evenly: 33% to 34%")
