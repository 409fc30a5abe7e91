"""A signal after the load has finished, while the workers are stopped, the result is built or the file is
written, keeps the finished result: saved whole (not marked interrupted: nothing was cut short), then the
command ends with the signal's status. Each signal is sent by the command's own process from inside that
window (a patched step), so the test needs no timing."""

from __future__ import annotations

import glob
import json
import os
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from accept_order.core import signals
from accept_order.experiments.latency import model_check
from accept_order.probes.evidence import EvidenceCapture
from accept_order.servers.registry import KINDS, launched_kinds

STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


def _signalling(original: Callable[..., Any], signum: int, times: int = 1) -> Callable[..., Any]:
    def step(*args: Any, **kwargs: Any) -> Any:
        for _ in range(times):
            signal.raise_signal(signum)  # to this thread, at once: the handler runs before the next line
        return original(*args, **kwargs)

    return step


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: signal.Signals(s).name)
def test_a_signal_while_the_workers_stop_keeps_the_whole_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int
) -> None:
    monkeypatch.setattr(EvidenceCapture, "after", _signalling(EvidenceCapture.after, signum))
    out = tmp_path / "l.json"
    result = run_cli(["latency", "-w", "2", "-n", "300", "-c", "4", "--json", str(out)])
    assert result.exit_code == STATUS[signum], result.output
    assert "Traceback" not in result.output and f"wrote {out}" in result.stderr
    doc = json.loads(out.read_text())
    assert sum(doc["served"]) == 300 and not doc.get("interrupted")  # the load was whole
    assert "latency by" in result.stdout or "Duration in ms" in result.stdout  # and reported


def test_a_signal_while_the_result_is_built_keeps_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's simulation takes up to a second after the workers have stopped."""
    monkeypatch.setattr(model_check, "simulate", _signalling(model_check.simulate, signal.SIGINT))
    out = tmp_path / "l.json"
    result = run_cli(
        ["latency", "--modes", "blocking,reuseport", "-w", "2", "-n", "200", "-c", "4", "--json", str(out)]
    )
    assert result.exit_code == 130, result.output
    doc = json.loads(out.read_text())
    # the signal came during the first mode's result: it is kept whole; the second never ran
    assert [r["server"]["mode"] for r in doc["runs"]] == ["blocking"] and doc["interrupted"] is True
    assert sum(doc["runs"][0]["served"]) == 200 and not doc["runs"][0].get("interrupted")


def test_a_signal_while_the_file_is_written_ends_after_it_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "Stop now, keep the file": the file is written whole, said, and the report left out."""
    from accept_order.experiments import documents

    monkeypatch.setattr(signals, "ECHO_S", 0.0)  # two SIGTERMs at once: two, not one delivered twice
    monkeypatch.setattr(documents, "save", _signalling(documents.save, signal.SIGTERM, times=2))
    out = tmp_path / "r.json"
    result = run_cli(["run", "-w", "2", "-n", "20", "--json", str(out)])
    assert result.exit_code == 143, result.output
    assert json.loads(out.read_text())["kind"] == "run" and f"wrote {out}" in result.stderr
    assert result.stdout == "" and "Traceback" not in result.output


def test_a_second_signal_while_an_interrupted_runs_result_is_kept_skips_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first signal during the last run's stop keeps it; a second during its save means stop now."""
    from accept_order.experiments import documents

    monkeypatch.setattr(signals, "ECHO_S", 0.0)  # two Ctrl-Cs, however soon: not one delivered twice
    monkeypatch.setattr(EvidenceCapture, "after", _signalling(EvidenceCapture.after, signal.SIGINT))
    monkeypatch.setattr(documents, "save", _signalling(documents.save, signal.SIGINT))
    out = tmp_path / "l.json"
    result = run_cli(["latency", "-w", "2", "-n", "100", "-c", "4", "--json", str(out)])
    assert result.exit_code == 130, result.output
    assert sum(json.loads(out.read_text())["served"]) == 100 and f"wrote {out}" in result.stderr
    assert "Duration in ms" not in result.stdout


@pytest.mark.parametrize("name", sorted(launched_kinds()))
def test_every_kind_keeps_its_finished_run_when_signalled_at_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The probe's matrix at the end of the load: each kind the tool launches, a SIGTERM as its workers are
    being stopped; the run is saved whole and the server leaves nothing (its private directory)."""
    kind = KINDS[name]
    mode = kind.default_mode()
    why = kind.missing() or kind.unavailable(mode)
    if why:
        pytest.skip(why)
    monkeypatch.setattr(EvidenceCapture, "after", _signalling(EvidenceCapture.after, signal.SIGTERM))
    out = tmp_path / "r.json"
    result = run_cli(["run", "--server", name, "-w", "2", "-n", "6", "--json", str(out)])
    assert result.exit_code == 143, result.output
    doc = json.loads(out.read_text())
    assert len(doc["records"]) == 6 and all(r["worker"] is not None for r in doc["records"]), doc["records"]
    assert not glob.glob(os.path.join(tempfile.gettempdir(), f"accept-order-*-{os.getpid()}-*"))


def _then_signal(original: Callable[..., Any], signum: int, calls: int = 1) -> Callable[..., Any]:
    """`original`, and a signal to this process right after its `calls`-th call returned."""
    count = [0]

    def step(*args: Any, **kwargs: Any) -> Any:
        value = original(*args, **kwargs)
        count[0] += 1
        if count[0] == calls:
            signal.raise_signal(signum)  # to this thread, at once: the handler runs before the next line
        return value

    return step


def test_a_signal_after_the_run_returned_and_before_its_save_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the lifecycle's end and the file (the progress bars' teardown, the command's own steps) the
    result is kept: saved whole, reported, then the signal's status."""
    from accept_order.experiments.latency import api as latency_api

    monkeypatch.setattr(latency_api, "run_latency", _then_signal(latency_api.run_latency, signal.SIGINT))
    out = tmp_path / "l.json"
    result = run_cli(["latency", "-w", "2", "-n", "100", "-c", "4", "--json", str(out)])
    assert result.exit_code == 130, result.output
    assert sum(json.loads(out.read_text())["served"]) == 100 and "Duration in ms" in result.stdout


def test_a_signal_between_two_modes_keeps_the_first_and_stops_the_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accept_order.experiments.latency import api as latency_api

    monkeypatch.setattr(latency_api, "run_latency", _then_signal(latency_api.run_latency, signal.SIGTERM))
    out = tmp_path / "l.json"
    result = run_cli(
        ["latency", "--modes", "blocking,reuseport", "-w", "2", "-n", "100", "-c", "4", "--json", str(out)]
    )
    assert result.exit_code == 143, result.output
    doc = json.loads(out.read_text())
    assert [r["server"]["mode"] for r in doc["runs"]] == ["blocking"] and doc["interrupted"] is True
    assert sum(doc["runs"][0]["served"]) == 100


def test_a_signal_while_the_load_generator_stops_keeps_the_whole_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the last connection, before the lifecycle's own hold: the drivers being ended."""
    from accept_order.loads import generator

    monkeypatch.setattr(generator, "end_processes", _signalling(generator.end_processes, signal.SIGINT))
    out = tmp_path / "l.json"
    result = run_cli(["latency", "-w", "2", "-n", "100", "-c", "4", "--json", str(out)])
    assert result.exit_code == 130, result.output
    doc = json.loads(out.read_text())
    assert sum(doc["served"]) == 100 and not doc.get("interrupted")
