"""ramp --repeat's reasons counted over the runs show the range of each figure ('p99 184.6-328.4 ms > 20 ms'):
each range goes where its figure stood, not into the first capital N of the line. A failed step's reason names
its errors ('5 failed (ECONNREFUSED 3, aborted 2)'), and the ranges were written into ECONNREFUSED:
'5-9 failed (ECO3-72REFUSED N, aborted N)'."""

from __future__ import annotations

from accept_order.experiments.ramp.repeated import pattern, with_ranges


def ranged(*saids: str) -> str:
    assert len({pattern(x) for x in saids}) == 1, saids  # the runs' reasons counted together
    return with_ranges(list(saids))


def test_an_errno_with_an_n_in_its_name_keeps_its_name() -> None:
    said = ranged("5 failed (ECONNREFUSED 3, aborted 2)", "9 failed (ECONNREFUSED 7, aborted 2)")
    assert said == "5-9 failed (ECONNREFUSED 3-7, aborted 2)", said
    said = ranged("1 failed (ENETUNREACH 1)", "4 failed (ENETUNREACH 4)")
    assert said == "1-4 failed (ENETUNREACH 1-4)", said


def test_a_figure_after_a_capital_n_and_the_bound_are_in_place() -> None:
    said = ranged("p99.9 40.5 ms > 20 ms", "p99.9 61.2 ms > 20 ms")
    assert said == "p99.9 40.5-61.2 ms > 20 ms", said
    said = ranged("SYN cookies sent 12 times", "SYN cookies sent 40 times")
    assert said == "SYN cookies sent 12-40 times", said


def test_a_large_figure_is_spelled_as_a_number() -> None:
    said = ranged("2000000 failed (ECONNRESET 2000000)", "2500000 failed (ECONNRESET 2500000)")
    assert said == "2000000-2500000 failed (ECONNRESET 2000000-2500000)", said
