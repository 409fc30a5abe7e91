"""The burst picture's title said 'Time until every client was served' of a burst where some clients failed (its
axis, table and legend said 'to the last reply or failure'); the title now ends where the times end. The
--repeat picture's figure, 'ms to serve the largest burst', counts a failure's end too and now says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from accept_order.experiments.documents import plot_document

GOLDEN = Path(__file__).parent / "data" / "golden"


@pytest.fixture(scope="module")
def matplotlib() -> Any:
    return pytest.importorskip("matplotlib")


def _title(cell_changes: dict[str, Any]) -> str:
    data = json.loads(GOLDEN.joinpath("burst.json").read_text())
    data["runs"][0]["cells"][-1].update(cell_changes)
    return str(plot_document("burst", data).get_suptitle())


def test_a_burst_where_some_failed_is_not_every_client_served(matplotlib: Any) -> None:
    assert _title({}) == "Time until every client was served (accept-order burst)"
    failed = _title({"errors": {"ECONNRESET": 7}})
    assert failed == "Time until every client was served or had failed (accept-order burst)", failed


def test_a_burst_cut_short_ends_at_the_stop(matplotlib: Any) -> None:
    # those under way at the stop are the stop's, not failures (the table says so): not 'or had failed'
    stopped = _title({"errors": {"aborted": 3}, "interrupted": True})
    assert stopped == "Time until every client was served, or the stop (accept-order burst)", stopped


def test_the_repeat_picture_counts_failures_in_its_figure(matplotlib: Any) -> None:
    data = json.loads(GOLDEN.joinpath("repeat-burst.json").read_text())
    assert "last reply or failure" in str(plot_document("repeat", data).get_suptitle())
