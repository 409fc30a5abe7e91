"""observe's io_uring words only where the accept calls counted nothing.

inspect reads a thread asleep in io_uring_enter as waiting on the listener (which socket an armed io_uring
request waits on is not shown), so a server whose workers accept in accept calls while some thread waits on a
ring for other work (file I/O) is named io-uring too. 2d0f181's source line then said 'blind to accepts made
through io_uring, as this server's are' under a count of the accepts the calls returned. The witness is the count
itself: the golden run's accept calls returned connections, so its accepts are not io_uring's.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

from rich.console import Console

from accept_order.experiments.observe.report import observe_report
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import headline

GOLDEN = Path(__file__).parent / "data" / "golden" / "observe.json"


def _named_io_uring(counted: bool) -> ObserveResult:
    doc = json.loads(GOLDEN.read_text())
    doc["mechanism"]["name"], doc["mechanism"]["modes"] = "io-uring", ["io-uring"]
    result = ObserveResult.from_dict(doc)
    assert result.traced and result.counts is not None and sum(result.counts) > 0
    if not counted:
        doc["workers"] = [{**w, "accepts": 0, "empty": 0} for w in doc["workers"]]
        result = ObserveResult.from_dict(doc)
        assert result.counts is not None and sum(result.counts) == 0
    return result


def _report(result: ObserveResult) -> str:
    out = StringIO()
    Console(file=out, width=1000).print(observe_report(result))
    return out.getvalue()


def test_counted_accepts_are_not_called_io_urings() -> None:
    result = _named_io_uring(counted=True)
    assert "io_uring" not in headline(result)
    assert "io_uring" not in _report(result)


def test_nothing_counted_still_says_the_count_is_blind() -> None:
    result = _named_io_uring(counted=False)
    assert "accept through io_uring" in headline(result)
    assert "blind to accepts made through io_uring, as this server's are" in _report(result)
