"""observe's 'evenly' is measured against an even share, not in fixed points. ae393fe kept 'evenly' for shares within
10 points of each other, which for 2 workers is 45% to 55%, but for 16 (an even share 6.25%) let 2 and 14 of 160
connections, 1% to 9%, read 'the 16 workers shared 160 connections evenly'. Shares further apart than a fifth of an
even share are said as a split chance allows ('as uneven as chance'): 10 points for 2 workers, as before."""

from __future__ import annotations

from observe_result_made import result

from accept_order.experiments.observe.verdict import headline

SIXTEEN = [2, 14, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 14]  # 160: chance allows it


def test_sixteen_workers_of_one_to_nine_percent_are_not_even() -> None:
    said = headline(result(SIXTEEN))
    assert " evenly" not in said and said.startswith("the 16 workers shared 160 connections: 1% to 9% each"), said
    assert "(as uneven as chance: " in said, said


def test_shares_within_a_fifth_of_an_even_share_are_even() -> None:
    assert " evenly: 45% to 55%" in headline(result([45, 55]))  # 10 points of 2 workers' 50%: the edge, even
    assert " evenly" not in headline(result([44, 56]))
    assert " evenly: 6% to 7%" in headline(result([10] * 15 + [11]))  # 16 workers, 1 connection apart of 161
    assert " evenly: 32% to 34%" in headline(result([32, 34, 34]))
