"""observe of 3 workers that took 135,699 connections at 31% to 34% each said they 'shared 135,699 connections
unevenly' right above 'Jain's index 0.998': over so many connections a chi-square test tells a few points from an
even split, but 'unevenly' read as the complaint 'one worker takes everything'. Shares told from chance yet within
the band observe calls even (a fifth of an even share between the fewest and the most) are 'nearly evenly', with
how far from an even share and that chance alone does not put them there; wider spreads stay 'unevenly'."""

from __future__ import annotations

from test_observe_units import result

from accept_order.experiments.observe.verdict import headline


def test_a_few_points_told_from_chance_over_many_connections_are_nearly_even() -> None:
    said = headline(result([42067, 46138, 47494]))  # 31.0%, 34.0%, 35.0% of 135,699
    assert said.startswith(
        "the 3 workers shared 135,699 connections nearly evenly: 31% to 35% each, within 3 points"
    ), said
    assert "of an even share (33%), yet further from it than chance alone puts them (chi-square test:" in said, said
    assert " unevenly:" not in said


def test_the_same_on_a_thousand_connections() -> None:
    said = headline(result([450, 550]))  # 1 time in 580 by chance
    assert said.startswith("the 2 workers shared 1,000 connections nearly evenly: 45% to 55% each, within 5 points"), (
        said
    )
    assert "1 time in 580" in said


def test_a_spread_beyond_the_band_told_from_chance_is_still_uneven() -> None:
    assert headline(result([2470, 8966, 6635, 6635])).startswith("the 4 workers shared 24,706 connections unevenly:")
    assert headline(result([4400, 5600])).startswith("the 2 workers shared 10,000 connections unevenly: 44% to 56%")


def test_chance_alike_and_small_counts_keep_their_words() -> None:
    assert headline(result([34, 33, 33])).startswith("the 3 workers shared 100 connections evenly:")
    assert headline(result([7, 17])).startswith("the 2 workers shared 24 connections: 29% to 71% each (as uneven as")
