"""--repeat keeps the rounds that finished when an error ends a later one (0.3 lost them all): they are
reported and saved, the file says why it stopped, and the command still ends with the error's one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from accept_order import api
from accept_order.core.errors import WorkerError


@pytest.fixture
def second_run_fails(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    real = api.sequential
    calls: list[int] = []

    def sequential(*args: Any, **kwargs: Any) -> Any:
        calls.append(len(calls))
        if len(calls) == 3:  # round 2's first run (two variants a round)
            raise WorkerError("worker 1 exited with status 1")
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "sequential", sequential)
    return calls


def test_the_rounds_before_an_error_are_kept(second_run_fails: list[int], tmp_path: Path) -> None:
    path = tmp_path / "repeat.json"
    result = run_cli(["compare", "--modes", "blocking,epoll", "-n", "3", "--repeat", "3", "--json", str(path)])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == "accept-order: error: worker 1 exited with status 1"
    assert len(second_run_fails) == 3  # nothing ran after the error
    saved = json.loads(path.read_text())
    assert len(saved["rounds"]) == 1 and [len(row) for row in saved["rounds"]] == [2]
    assert saved["stopped"] == "worker 1 exited with status 1" and "interrupted" not in saved
    assert "1 round (stopped by an error: the rounds that finished)" in result.stdout
    assert "Stopped early: worker 1 exited with status 1; no later round ran." in result.stdout
    shown = run_cli(["show", str(path)])
    assert shown.exit_code == 0 and "Stopped early: worker 1 exited" in shown.stdout


def test_an_error_in_the_first_round_is_the_error_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def failing(*args: Any, **kwargs: Any) -> Any:
        raise WorkerError("worker 0 exited with status 1")

    monkeypatch.setattr(api, "sequential", failing)
    path = tmp_path / "repeat.json"
    result = run_cli(["compare", "--modes", "blocking,epoll", "-n", "3", "--repeat", "2", "--json", str(path)])
    assert result.exit_code == 1 and not path.exists(), result.output
    assert result.stderr.splitlines() == ["accept-order: error: worker 0 exited with status 1"]
