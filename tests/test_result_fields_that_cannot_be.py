"""Result files held what no run can make and were shown as if measured: an observe worker holding more connections
at its last look than it ever held at once (connections_held > connections_held_peak), and a kept latency run's
per-worker lists shorter than its workers (connections, held_at_end, worker_histograms: the missing workers read
'-', not counted). Each is refused in one line naming the field, as every other bad field is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

DATA = Path(__file__).parent / "data"


def _saved(tmp_path: Path, source: str, change: object) -> str:
    doc = json.loads((DATA / source).read_text())
    change(doc)  # type: ignore[operator]
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_an_observe_worker_holding_more_than_its_peak_is_refused(tmp_path: Path) -> None:
    def held_past_peak(doc: dict) -> None:
        doc["workers"][1]["connections_held"] = doc["workers"][1]["connections_held_peak"] + 1

    path = _saved(tmp_path, "first_hour_4_observe_kept.json", held_past_peak)
    assert_one_error_line(
        run_cli(["show", path]), 1, "workers[1].connections_held: is 7, more than the most it held at once"
    )
    # as much as its peak: what a last look at the busiest moment saves
    at_peak = _saved(tmp_path, "first_hour_4_observe_kept.json", lambda d: d["workers"][1].update(connections_held=6))
    assert run_cli(["show", at_peak]).exit_code == 0


@pytest.mark.parametrize("name", ["connections", "held_at_end", "worker_histograms"])
def test_a_kept_run_s_list_shorter_than_its_workers_is_refused(tmp_path: Path, name: str) -> None:
    path = _saved(tmp_path, "v2/latency-kept.json", lambda d: d.update({name: d[name][:1]}))
    assert_one_error_line(run_cli(["show", path]), 1, f"{name}: has 1 entry, one per worker, but the server had 2")


def test_a_run_of_one_request_per_connection_keeps_its_lists_empty(tmp_path: Path) -> None:
    path = _saved(tmp_path, "v2/latency-kept.json", lambda d: d.update(connections=[], held_at_end=[]))
    assert run_cli(["show", path]).exit_code == 0
