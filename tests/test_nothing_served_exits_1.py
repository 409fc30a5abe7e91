"""Every command whose load served nothing at all saves its result, then ends with one line saying why, exit 1.

latency did so alone: 'run --attach' of a port that answered nothing printed 'Verdict: nothing served' and exited
0, as did sweep, burst, ramp, herd, compare and every --repeat ('latency --work 1s --timeout 100ms -n 2 --repeat 2'
exited 0 where the same without --repeat exited 1). Launched: the built-in workers spend --work 1s on each
connection before they answer, and the client gives up at --timeout 100ms, so no connection can be served however
busy the machine is. Attached: Debian's nginx whose '/' answers 404, its access log the witness that it answered
each connection and served none a 200.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import Result
from conftest import assert_one_error_line, run_cli
from nginx_by_hand import nginx_by_hand, one_server_conf

TIMEOUT_S = 20.0
UNANSWERABLE = ["--work", "1s", "--timeout", "100ms", "-w", "1"]
COMMANDS = {
    "run": ["run", "-n", "2"],
    "herd": ["herd", "-n", "2", "--modes", "epoll"],
    "compare": ["compare", "-n", "2", "--modes", "epoll"],
    "latency": ["latency", "-n", "2", "-c", "2"],
    "sweep": ["sweep", "--accept-batch", "1", "-n", "2", "-c", "2"],
    "burst": ["burst", "--clients", "2", "--modes", "epoll"],
    "ramp": ["ramp", "--rates", "20", "--step", "200ms"],
}


def _saved_then_one_line(result: Result, saved: Path, *fragments: str) -> str:
    """Exit 1; on stderr 'wrote FILE' (the result saved first: cli/common.report_and_save), then the one error line
    holding every fragment, and nothing else (no traceback, no note)."""
    assert result.exit_code == 1, f"exit {result.exit_code}; stderr: {result.stderr!r}"
    assert result.stderr.splitlines()[:1] == [f"wrote {saved}"], result.stderr
    assert_one_error_line(_without_first_line(result), 1, *fragments)
    return str(result.stderr.splitlines()[-1])


def _without_first_line(result: Result) -> Any:
    """`result` as assert_one_error_line reads it, its first stderr line left out."""
    return SimpleNamespace(
        stderr="\n".join(result.stderr.splitlines()[1:]), exit_code=result.exit_code, output=result.output
    )


def _saved(path: Path) -> dict[str, object]:
    """The result file, whole (written before the error line)."""
    document = json.loads(path.read_text())
    assert isinstance(document, dict) and document.get("kind"), document
    return document


@pytest.mark.parametrize("repeat", [1, 2])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_launched_load_that_served_nothing_exits_1_after_its_file(command: str, repeat: int, tmp_path: Path) -> None:
    saved = tmp_path / "result.json"
    args = [*COMMANDS[command], *UNANSWERABLE, "--json", str(saved)]
    result = run_cli([*args, "--repeat", str(repeat)] if repeat > 1 else args)
    _saved_then_one_line(result, saved, "served nothing: ", "× timeout")
    document = _saved(saved)
    assert document["kind"] == ("repeat" if repeat > 1 else document["kind"])
    if repeat > 1:  # each round's run is named with its round
        assert "(round 1) served nothing" in result.stderr and "(round 2) served nothing" in result.stderr


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="reload needs root (a network namespace)")
def test_reload_that_served_nothing_exits_1_after_its_file(tmp_path: Path) -> None:
    saved = tmp_path / "reload.json"
    args = ["reload", "--modes", "epoll", "--how", "leave", "--duration", "1s", "-c", "2", *UNANSWERABLE, "-w", "2"]
    result = run_cli([*args, "--json", str(saved)])
    _saved_then_one_line(result, saved, "served nothing: ", "× timeout")
    assert _saved(saved)["kind"] == "reload"


NGINX_404 = one_server_conf("$status", location="return 404;")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")
def test_run_and_latency_attached_agree_on_nothing_served(free_port: int, tmp_path: Path) -> None:
    with nginx_by_hand(NGINX_404, free_port, 2, TIMEOUT_S) as nginx:
        attach = ["--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http"]
        run = run_cli(["run", *attach, "-n", "3", "--json", str(tmp_path / "run.json")])
        latency = run_cli(["latency", *attach, "-n", "3", "-c", "1", "--json", str(tmp_path / "latency.json")])
        logged = nginx.access_log.read_text().split()
    for result, name in ((run, "run"), (latency, "latency")):
        said = ("served nothing: 3 × bad reply (HTTP 404)", "status other than 200")
        _saved_then_one_line(result, tmp_path / f"{name}.json", *said)
    assert "Verdict: nothing served" in run.stdout, run.stdout  # the report still says it, before the line
    assert _saved(tmp_path / "run.json")["kind"] == "run" and _saved(tmp_path / "latency.json")["kind"] == "latency"
    assert logged == ["404"] * 6, logged  # the witness: nginx answered all six, none with a 200
