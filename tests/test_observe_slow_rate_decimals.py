"""observe of a Node cluster taking a connection every few seconds showed '/s' of 0 on each worker's row beside a
total of 1: each rate rounded to a whole number. The column now has the decimals its slowest rate above 0 needs
(the same for every row and the total), so a worker that took connections never reads 0/s."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import printed_like_the_report, run_cli

from accept_order.experiments.observe.report import live_view
from accept_order.experiments.observe.result import ObserveResult

DATA = Path(__file__).parent / "data"


def _slow(tmp_path: Path) -> Path:
    """A 6.1 s observation (puma's, its counts changed) in which the workers took 2, 3 and 2 connections."""
    doc = json.loads((DATA / "first_hour_4_observe_kept.json").read_text())
    for worker, accepted in zip(doc["workers"], (2, 3, 2), strict=True):
        worker["accepts"] = accepted
    doc["intervals"][-1]["accepts"] = [1, 0, 1]
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(doc))
    return path


def _rates(printed: str) -> list[str]:
    """The /s cells of the worker table's rows and of its total, in order (the cell after the share's bar; the
    total's, the one before its empty accepts and %CPU)."""
    cells = [line.split() for line in printed.split("Load:")[0].splitlines()]
    rows = [c[c.index(next(x for x in c if x[0] in "█░")) + 1] for c in cells if c[:1] in (["0"], ["1"], ["2"])]
    return rows + [c[-3] for c in cells if c[:1] == ["total"]]


def test_the_report_s_rates_never_read_zero_beside_connections(tmp_path: Path) -> None:
    shown = run_cli(["show", str(_slow(tmp_path))])
    assert shown.exit_code == 0, shown.output
    assert _rates(shown.stdout) == ["0.33", "0.49", "0.33", "1.14"], shown.stdout  # 2, 3, 2 and 7 in 6.143 s


def test_the_live_view_s_rates_too(tmp_path: Path) -> None:
    result = ObserveResult.from_dict(json.loads(_slow(tmp_path).read_text()))
    printed = printed_like_the_report(live_view(result), 120, color=False)
    per_s = 1 / result.intervals[-1].span_s  # its last interval: 1, 0 and 1 connections
    assert _rates(printed)[:3] == [f"{per_s:.2f}", "0.00", f"{per_s:.2f}"], printed
