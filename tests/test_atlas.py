"""`accept-order atlas`: each installed server in each of its modes, measured the same way.

Checked against what does not depend on the machine's timing: every mode the server has runs, /proc shows
the mechanism the mode sets up (inspect, while it ran), every connection of the load is served or failed,
and the saved result shows and exports again.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from conftest import run_cli

from accept_order.analysis.fairness import jain_index
from accept_order.servers.registry import runnable, server_kind

pytestmark = pytest.mark.skipif(server_kind("nginx").missing() is not None, reason="needs nginx")
LOAD = 300


def test_atlas_of_nginx_measures_every_mode_and_names_its_mechanism(tmp_path: Path) -> None:
    out = tmp_path / "atlas.json"
    result = run_cli(["atlas", "--servers", "nginx", "--load-connections", str(LOAD), "-c", "8", "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    modes, _ = runnable("nginx", None)
    assert [row["mode"] for row in doc["rows"]] == modes
    kind = server_kind("nginx")
    for row in doc["rows"]:
        assert row["error"] is None, row
        assert row["seen_as"] == kind.mode(row["mode"]).mechanism, row  # what /proc showed while it ran
        assert sum(row["served"]) + row["failed"] == LOAD  # every connection of the load counted
        assert row["order"] and row["order_fit"], row
        # each mode's idle order is its mechanism's: epoll's one connection per worker at start, then its run
        assert row["expected"], row
    assert "envoy" not in doc["skipped"]  # only asked for nginx
    # the progress says which run of how many
    assert [line for line in result.stderr.splitlines() if "run 1 of" in line]
    # saved, it shows the same table and exports one CSV row per measured row
    shown = run_cli(["show", str(out)])
    assert shown.exit_code == 0 and "accept-order atlas" in shown.stdout
    rows = list(csv.DictReader(io.StringIO(run_cli(["show", str(out), "--format", "csv"]).stdout)))
    assert [(r["server"], r["mode"]) for r in rows] == [("nginx", m) for m in modes]
    for r, row in zip(rows, doc["rows"], strict=True):
        assert float(r["jain"]) == pytest.approx(jain_index(row["served"]))


def test_atlas_names_what_it_cannot_run() -> None:
    result = run_cli(["atlas", "--servers", "nosuch"])
    assert result.exit_code == 2 and "'nosuch': give one or more of builtin, nginx" in result.stderr


def test_an_atlas_interrupted_before_its_first_row_saves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C before any row finished: a plain interrupt (an earlier file of that name must not become empty)."""
    from accept_order.experiments.atlas import run as atlas_run
    from accept_order.experiments.session import RunInterrupted

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(atlas_run, "measure", interrupted)
    with pytest.raises(KeyboardInterrupt) as stop:
        atlas_run.run_atlas(atlas_run.AtlasPlan(servers=("builtin",)))
    assert not isinstance(stop.value, RunInterrupted)


def test_a_load_over_the_open_file_limit_is_refused_before_anything_starts() -> None:
    # as many connections as that: fewer would cut -c to them (no more can be open at once), which then fits
    result = run_cli(["atlas", "--servers", "builtin", "-c", "100000", "--load-connections", "1000000"])
    assert result.exit_code == 2 and "--concurrency" in result.stderr
    assert "run 1 of" not in result.stderr  # nothing ran


@pytest.mark.parametrize("saved", ["tests/data/golden/atlas.json", "docs/atlas.json"])
def test_the_atlas_fits_80_columns(saved: str) -> None:
    shown = run_cli(["show", str(Path(__file__).parent.parent / saved)], columns=80)
    assert shown.exit_code == 0
    assert max(len(line) for line in shown.stdout.splitlines()) <= 80


def test_the_short_order_names_keep_what_was_seen_apart_from_the_mechanism() -> None:
    from accept_order.experiments.atlas.report import _short

    assert _short("an order like FIFO (the mechanism predicts none)") == "like FIFO"
    assert _short("an order like runs of 2 per worker (the mechanism predicts none)") == "like runs of 2 per worker"
    assert _short("runs of 16 per worker") == "runs of 16 per worker"
    # nginx's start-up, then its runs (analysis/reorder.py), as far as the connections showed them
    assert _short("one per worker at start, then runs of 16 per worker") == "1 each, then runs of 16"
    assert _short("one per worker at start, then a run of 9 (of 16: the load ended first)") == "1 each, then a run of 9"
    assert _short("one per worker at start") == "1 each"
    assert _short("one per worker at start, then a run of 20") == "1 each, then a run of 20"  # not nginx's 16
    assert (
        _short("one per worker at start, then runs of 3 to 16 (4 of the 6 16 long)") == "1 each, then runs of 3 to 16"
    )
    # Fewer connections than workers: one each, to some of the workers, never "1 each" (every worker one).
    assert _short("one each to 2 of the 3 workers") == "1 each to 2 of 3"
    assert _short("hash-spread, more uneven than a uniform hash") == "uneven hash"
    assert _short("the client's CPU picks the worker, one worker takes all") == "client's CPU"
    assert _short(None) == "-"


def test_the_legend_explains_only_what_the_table_shows() -> None:
    from accept_order.experiments.atlas.report import legend
    from accept_order.experiments.atlas.result import AtlasResult, AtlasRow

    start = "one per worker at start, then a run of 9 (of 16: the load ended first)"
    nginx = AtlasRow("nginx", "epoll", "", order=start, expected=True, served=(5, 5, 5))
    plain = legend(AtlasResult((nginx,), {}, None))
    assert "woken" not in plain and "like ...:" not in plain and "!:" not in plain and "*:" not in plain
    assert "1 each, then ...: one connection to each worker at start, then the runs seen" in plain
    assert "1 each to n of m" not in plain
    seen = "an order like runs of 2 per worker (the mechanism predicts none)"
    herd = AtlasRow("h2o", "threads", "", order=seen, expected=True, woken=2.5, served=(5, 5, 5), failed=1)
    odd = AtlasRow("builtin", "epoll", "", order="rotation (FIFO among idle workers)", expected=False, served=(5, 5))
    full = legend(AtlasResult((herd, odd), {}, None))
    assert "1 each" not in full
    few = AtlasRow("nginx", "epoll", "", order="one each to 2 of the 3 workers", expected=True, served=(5, 5, 5))
    some = legend(AtlasResult((few,), {}, None))
    assert "1 each to n of m: each connection to a different worker, fewer connections than workers" in some
    assert "1 each, then" not in some
    for word in ("woken: workers woken per connection", "like ...: the order seen", "!: not the order", "*: some"):
        assert word in full
