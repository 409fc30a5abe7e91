"""Ways to break accept-order from outside that must end in one line and a clear exit status:
a signal while it is still importing, running out of file descriptors, a results file that cannot be
written after the run, a worker dying mid-run, a saved file naming a mode this version does not know."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core.errors import ResultFileError
from accept_order.servers.worker import FAULT_ENV

V1 = Path(__file__).parent / "data" / "v1"

# Imports the CLI as the console script does, with `import click` replaced by a signal (or Ctrl-C):
# deterministic "signal during start-up", at the moment the heavy imports run.
STARTUP = """
import builtins, os, signal, sys
real = builtins.__import__
which = sys.argv[1]
def fake(name, *args, **kwargs):
    if name == "click":
        if which == "TERM":
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            raise KeyboardInterrupt
    return real(name, *args, **kwargs)
builtins.__import__ = fake
sys.argv = ["accept-order", "run"]
from accept_order.cli import main
main()
"""


@pytest.mark.parametrize(("which", "status", "word"), [("TERM", 143, "terminated"), ("INT", 130, "interrupted")])
def test_a_signal_during_start_up_is_one_line(which: str, status: int, word: str) -> None:
    proc = subprocess.run([sys.executable, "-c", STARTUP, which], capture_output=True, text=True, timeout=60)
    assert proc.returncode == status, proc.stderr
    assert proc.stderr.splitlines() == [f"accept-order: error: {word} while starting"]
    assert proc.stdout == ""


def _limit_files(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


def test_out_of_file_descriptors_while_starting_workers() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "accept_order", "run", "-w", "20", "-n", "30"],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: _limit_files(64),
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("accept-order: error: "), lines
    assert "Too many open files" in lines[0] and "ulimit -n" in lines[0]
    assert "Traceback" not in proc.stderr


def test_a_failed_write_keeps_the_report_on_screen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import accept_order.results.envelope as envelope

    def full(path: object, document: object) -> None:
        raise ResultFileError(f"cannot write {path}: No space left on device")

    monkeypatch.setattr(envelope, "write_document", full)
    target = tmp_path / "run.json"
    result = run_cli(["run", "-n", "3", "--json", str(target)])
    assert_one_error_line(result, 1, "No space left on device")
    assert "Sequence:" in result.stdout and "Verdict:" in result.stdout  # printed before the write failed
    assert not target.exists()


def test_a_worker_dying_during_latency_says_how_far_the_run_got() -> None:
    result = run_cli(["latency", "-w", "2", "-n", "4000", "-c", "8"], extra_env={FAULT_ENV: "die-on-accept:1"})
    line = assert_one_error_line(result, 1, "worker 1", "died")
    assert "the run stopped after" in line and "served" in line and "failed" in line


def test_a_saved_file_naming_an_unknown_mode_is_a_file_error(tmp_path: Path) -> None:
    document = json.loads((V1 / "herd.json").read_text())
    document["runs"][0]["plan"]["mode"] = "no-such-mode"
    path = tmp_path / "herd.json"
    path.write_text(json.dumps(document))
    result = run_cli(["show", str(path)])
    assert_one_error_line(result, 1, "no-such-mode")
    assert result.stdout == ""
