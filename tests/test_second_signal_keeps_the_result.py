"""A second Ctrl-C (or SIGTERM) means stop now: the report is left out. Without --json that lost the measurement
whole ('latency --modes epoll,reuseport --duration 20s', Ctrl-C twice at 4 s: exit 130, 'interrupted; all workers
stopped' and nothing else, four seconds measured and gone), and with it nothing said why no report came. The result
is now kept in a new file of the working directory, which a line names; with --json the line says `show` prints the
report. Both signals are sent by the command's own process as its workers stop (a patched step), so no timing."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from conftest import run_cli
from test_signal_after_load import _signalling

from accept_order.core import signals
from accept_order.probes.evidence import EvidenceCapture


@pytest.fixture
def twice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signals, "ECHO_S", 0.0)  # two Ctrl-Cs at once: two, not one delivered twice
    monkeypatch.setattr(EvidenceCapture, "after", _signalling(EvidenceCapture.after, signal.SIGINT, times=2))


@pytest.mark.usefixtures("twice")
def test_without_json_the_result_is_kept_in_a_file_it_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(["latency", "-w", "2", "-n", "100", "-c", "4"])
    assert result.exit_code == 130, result.output
    assert result.stdout == "" and "Traceback" not in result.output
    (kept,) = tmp_path.glob("accept-order-latency-*.json")
    line = next(line for line in result.stderr.splitlines() if "interrupted again" in line)
    assert line == (
        f"accept-order: interrupted again: the report is left out; the result is kept in ./{kept.name} "
        "('accept-order show' prints it)"
    ), line
    assert sum(json.loads(kept.read_text())["served"]) == 100
    shown = run_cli(["show", str(kept)])
    assert shown.exit_code == 0 and "Duration in ms" in shown.stdout


@pytest.mark.usefixtures("twice")
def test_with_json_the_line_says_show_prints_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(["latency", "-w", "2", "-n", "100", "-c", "4", "--json", "l.json"])
    assert result.exit_code == 130, result.output
    assert result.stdout == "" and sorted(p.name for p in tmp_path.iterdir()) == ["l.json"]
    said = "accept-order: interrupted again: the report is left out; 'accept-order show l.json' prints it"
    assert said in result.stderr.splitlines() and "wrote l.json" in result.stderr


@pytest.mark.usefixtures("twice")
def test_a_json_file_that_cannot_be_written_is_kept_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--json into a folder gone by the run's end (removed mid-run, as by a cleanup job): the line said 'accept-order
    show out/l.json' prints the report, of a file never written, and the result was lost with the report (exit 1,
    no file anywhere: 'latency --modes epoll,reuseport --duration 20s --json out/x.json', out/ removed at 3 s, Ctrl-C
    twice at 4 s). It is kept in a new file of the working directory, which the line names, before the error."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    after = EvidenceCapture.after  # the fixture's: both signals, then the workers stop

    def gone(*args: object, **kwargs: object) -> object:
        (tmp_path / "out").rmdir()
        return after(*args, **kwargs)

    monkeypatch.setattr(EvidenceCapture, "after", gone)
    result = run_cli(["latency", "-w", "2", "-n", "100", "-c", "4", "--json", "out/l.json"])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    (kept,) = tmp_path.glob("accept-order-latency-*.json")
    assert result.stderr.splitlines()[-2:] == [
        f"accept-order: interrupted again: the report is left out; the result is kept in ./{kept.name} "
        "('accept-order show' prints it)",
        "accept-order: error: cannot write out/l.json: No such file or directory",
    ], result.stderr
    assert sum(json.loads(kept.read_text())["served"]) == 100
