"""atlas's --driver means what it means on every command that drives the load generator: the loop asked
for runs every row's load (said in the report and in each row of the file), io_uring where it cannot run
is one line before any server starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.experiments.atlas.run import AtlasPlan


@pytest.mark.parametrize("loop", ["auto", "io_uring", "epoll"])
def test_the_plans_loop_is_the_loads(loop: str) -> None:
    assert AtlasPlan(driver=loop).load().driver == loop


def test_io_uring_where_it_cannot_run_is_refused_before_any_server_starts(
    no_uring: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accept_order.experiments.atlas import run as atlas_run

    def measured(*a: Any, **k: Any) -> Any:
        raise AssertionError("a row was measured before --driver io_uring was refused")

    monkeypatch.setattr(atlas_run, "measure", measured)
    assert_one_error_line(run_cli(["atlas", "--servers", "builtin", "--driver", "io_uring"]), 2, "--driver io_uring")


def test_every_row_says_the_loop_it_ran_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from accept_order.experiments.atlas import run as atlas_run

    real = atlas_run.runnable
    monkeypatch.setattr(atlas_run, "runnable", lambda name, m: (real(name, m)[0][:2], {}))  # two modes will do
    out = tmp_path / "atlas.json"
    args = ["atlas", "--servers", "builtin", "-w", "2", "-n", "2", "--load-connections", "20", "-c", "2"]
    result = run_cli([*args, "--driver", "epoll", "--json", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 2 and [row["loop"] for row in rows] == ["epoll", "epoll"], rows
    assert "20 connections, 2 in flight, drivers on epoll" in result.stdout
