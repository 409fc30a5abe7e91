"""A Ctrl-C early in a command (timeout -s INT 0.5 accept-order inspect --port P; merge, plot, observe at 0.7 s)
ended with 'interrupted; all workers stopped', of workers never started: the signal landed after option parsing,
before the command's body (where inspect and observe say they left the server alone). Now that is 'nothing was
started', as it is for the commands that only read result files, wherever it lands in them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.cli import room

DATA = Path(__file__).parent / "data"


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt  # what a SIGINT landing in the command's last step before its body raises


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "--port", "1"],
        ["observe", "--port", "1"],
        ["merge", "a.json", "b.json"],
        ["plot", "a.json", "-o", "a.png"],
        ["latency", "-w", "2", "-n", "10"],
    ],
)
def test_a_signal_before_the_body_says_nothing_was_started(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    monkeypatch.setattr(room, "check_room_for", _interrupt)
    line = assert_one_error_line(run_cli(args), 130, "interrupted; nothing was started")
    assert "workers" not in line


def test_a_signal_inside_a_file_reader_says_nothing_was_started(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from accept_order.experiments import documents

    monkeypatch.setattr(documents, "load", _interrupt)
    saved = shutil.copy(DATA / "golden" / "latency.json", tmp_path / "latency.json")
    assert_one_error_line(run_cli(["show", str(saved)]), 130, "interrupted; nothing was started")


def test_a_signal_in_observe_s_first_import_says_the_server_was_not_touched(monkeypatch: pytest.MonkeyPatch) -> None:
    """observe imported the API before saying it only watches: a Ctrl-C 0.7 s in landed in that import."""
    from accept_order import api

    def importing(name: str) -> object:
        raise KeyboardInterrupt  # the signal landing while `from ..api import observe` runs

    monkeypatch.setattr(api, "__getattr__", importing)  # the API imports each function on first use, by it
    line = assert_one_error_line(run_cli(["observe", "--port", "1"]), 130, "the server was not touched")
    assert "workers" not in line
