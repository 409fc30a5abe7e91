"""Review RF2 of 910b008: observe's /s column got the decimals its slowest rate needs, but the live view's heading,
its only total, still rounded to a whole number: '2 connections/s' above rows of 0.88, 0.00 and 0.88 (a Node
cluster under 0.5 connections a second read '0 connections/s' above rows that took some). It has the rows'
decimals now, and so has the plain line of each interval (no terminal), which read '0/s' beside shares of 50%."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import printed_like_the_report

from accept_order.experiments.observe.report import interval_line, live_view
from accept_order.experiments.observe.result import ObserveResult

DATA = Path(__file__).parent / "data"


def _result(last: list[int]) -> ObserveResult:
    doc = json.loads((DATA / "first_hour_4_observe_kept.json").read_text())  # 3 workers, a last interval of 1.137 s
    doc["intervals"][-1]["accepts"] = last
    return ObserveResult.from_dict(doc)


def _live(last: list[int]) -> str:
    return printed_like_the_report(live_view(_result(last)), 120, color=False)


def test_the_live_heading_has_the_rows_decimals() -> None:
    printed = _live([1, 0, 1])
    assert "6 s of 6 s: 1.76 connections/s;" in printed, printed  # 2 in 1.137 s; the rows 0.88, 0.00, 0.88
    assert "0.88" in printed
    assert "6 s of 6 s: 1,363 connections/s;" in _live([1500, 0, 50])  # every row above 0 at 10/s or more: whole


def test_the_plain_line_has_them_too() -> None:
    line = interval_line(_result([1, 0, 0]))
    assert "    0.88/s  max queue" in line and " 0:100%" in line, line  # 1 in 1.137 s, not '0/s'
    assert "   1,363/s  max queue" in interval_line(_result([1500, 0, 50]))


def test_a_narrow_terminal_loses_columns_not_digits() -> None:
    """At COLUMNS=60 the live table read '1,0…' for 1,085 connections/s and '293…' for a pid (at 40: '1…'): rich
    cut every column to fit. The least needed columns go first now (the bar, the pid, ...); a number is never cut."""
    result = _result([1234, 567, 2345])  # 1,085, 499 and 2,062 a second
    for width in (40, 60):
        printed = printed_like_the_report(live_view(result), width, color=False)
        table = printed.split("overflows 0")[1]
        assert "…" not in table, printed
        assert all(rate in table for rate in ("1,085", "499", "2,062")), printed
        assert max(len(line.rstrip()) for line in printed.splitlines()) <= width, printed
    wide = printed_like_the_report(live_view(result), 120, color=False)
    assert "29325" in wide and "░░░░" in wide  # the pid and the bar, where there is room
