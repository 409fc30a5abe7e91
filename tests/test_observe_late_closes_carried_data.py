"""Review RC of 9498b8c: its message says the empty-load verdict no longer says 'none carried data' where the
closes read while observe settled carried some; no test held it (the verdict's `late` could go unnoticed)."""

from __future__ import annotations

from dataclasses import replace

from test_observe_unread_tails import first_load_line, seen_no_bytes

from accept_order.experiments.observe.result import ObserveResult

NOTHING_OPEN = "load: no connection was open at a sample"


def nothing_seen(**closes: int) -> ObserveResult:
    empty = tuple(
        replace(w, connections_held=0, connections_held_peak=0, connections_observed=0) for w in seen_no_bytes().workers
    )
    return replace(seen_no_bytes(**closes), workers=empty)


def test_late_closes_that_carried_data_keep_the_verdict_from_saying_none_did() -> None:
    assert first_load_line(nothing_seen(closes_late=3, closes_late_bytes_in=120)) == NOTHING_OPEN
    # late closes that carried nothing, or a file from before the field: as before
    for figures in ({"closes_late": 2, "closes_late_bytes_in": 0}, {}):
        line = first_load_line(nothing_seen(**figures))
        assert line == f"{NOTHING_OPEN} and none carried data while observed", figures
