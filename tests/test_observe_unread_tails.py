"""observe's load verdict where no byte was counted: it says a connection's data was counted to its close only
where every close was read. Found running observe against nginx (4 workers) under wrk `Connection: close`,
interrupted after 2 s: 2 connections seen, 12,926 announcements skipped for the budget, 1 closed busy, and the
verdict said 'none carried data from its first look to its close or the end' beside the lines saying so."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from accept_order.experiments.observe.result import ObservedWorker, ObserveResult
from accept_order.experiments.observe.verdict import verdict

GOLDEN = Path(__file__).parent / "data" / "golden" / "observe.json"
TO_CLOSE = "none carried data from its start (or the first look, if open as observe began) to its close or the end"
BETWEEN = "none carried data between two looks at it"


def seen_no_bytes(**closes: int) -> ObserveResult:
    """Two connections seen held over 4 workers, no byte counted, closes announced with these figures."""
    base = ObserveResult.from_dict(json.loads(GOLDEN.read_text()))
    seen = [0, 1, 0, 1]
    workers = tuple(
        replace(
            ObservedWorker(i, 100 + i, None, 10, 0, None, 1.0, 10, 0),
            connections_held=seen[i],
            connections_held_peak=seen[i],
            connections_observed=seen[i],
            bytes_in=0,
            bytes_out=0,
            segments_in=0,
            segments_out=0,
        )
        for i in range(4)
    )
    figures = {"closes_counted": 0, "closes_lost": 0, "closes_skipped": 0, "closed_unlooked": 0} | closes
    return replace(
        base, workers=workers, intervals=(), traced=True, load_samples=5, load_every_s=0.5, accepted_seen=2, **figures
    )


def first_load_line(result: ObserveResult) -> str:
    return next(line for line in verdict(result) if line.startswith("load:"))


def test_every_close_read_says_to_its_close() -> None:
    assert TO_CLOSE in first_load_line(seen_no_bytes())


def test_closes_skipped_lost_or_closed_busy_do_not_say_to_its_close() -> None:
    for figures in ({"closes_skipped": 12_926, "closed_busy": 1}, {"closes_skipped": 5}, {"closes_lost": 3},
                    {"closed_busy": 1}):  # fmt: skip
        line = first_load_line(seen_no_bytes(**figures))
        assert TO_CLOSE not in line and BETWEEN in line, (figures, line)


def test_no_connection_seen_does_not_say_none_carried_data_where_closes_went_unread() -> None:
    nothing = replace(
        seen_no_bytes(closes_skipped=40),
        workers=tuple(
            replace(w, connections_held=0, connections_held_peak=0, connections_observed=0)
            for w in seen_no_bytes().workers
        ),  # fmt: skip
    )
    assert first_load_line(nothing) == "load: no connection was open at a sample"
    read_all = replace(nothing, closes_skipped=0)
    assert first_load_line(read_all) == "load: no connection was open at a sample and none carried data while observed"
