"""A stdout that cannot take the report loses no result: the --json file is written first, then the
report is printed. Its reader gone (`| head`) ends the command quietly with 141 (128 + SIGPIPE, what the
shell shows for `yes | head`); a closed or full stdout is one line naming stdout (and the saved file);
a stdout whose encoding lacks "µ" gets "u" instead.

Real descriptors (a closed fd 1, /dev/full, a pipe whose reader closed) need a subprocess; the encoding
case runs in-process.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from accept_order.cli.app import main

TIMEOUT_S = 60.0


def accept_order(*args: str, **popen: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-m", "accept_order", *args],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": "200"},
        **popen,
    )


def kind_of(path: Path) -> str:
    return str(json.loads(path.read_text())["kind"])


def test_a_closed_stdout_keeps_the_file_and_says_so_in_one_line(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    proc = accept_order("run", "-w", "2", "-n", "3", "--json", str(saved), preexec_fn=lambda: os.close(1))
    _, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 1, err
    assert err.decode().splitlines() == [
        f"accept-order: error: cannot write to stdout: it is closed (the result is saved in {saved})"
    ]
    assert kind_of(saved) == "run"


def test_a_full_stdout_keeps_the_file_and_blames_stdout_not_ulimit(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    with open("/dev/full", "wb") as full:
        proc = accept_order("run", "-w", "2", "-n", "3", "--json", str(saved), stdout=full)
        _, err = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 1, err
    assert err.decode().splitlines() == [
        f"accept-order: error: cannot write to stdout: No space left on device (the result is saved in {saved})"
    ]
    assert kind_of(saved) == "run"


def test_serve_whose_reader_went_away_saves_the_tally_and_ends_quietly(tmp_path: Path) -> None:
    """`serve --json s.json | head -1`, then SIGTERM: the tally cannot be printed, the file is written."""
    saved = tmp_path / "serve.json"
    proc = accept_order("serve", "-m", "blocking", "-w", "2", "--json", str(saved), stdout=subprocess.PIPE)
    assert proc.stdout is not None
    banner = proc.stdout.readline().decode()  # blocks until serve is listening (or has exited)
    assert re.match(r"accept-order serve: mode blocking, 2 workers listening on ", banner), banner
    proc.stdout.close()  # what `head -1` does after its line
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=TIMEOUT_S)
    assert (proc.returncode, err.decode()) == (141, "")
    assert kind_of(saved) == "serve"


def test_an_ascii_stdout_gets_the_report_in_ascii_and_the_file(tmp_path: Path) -> None:
    """PYTHONIOENCODING=ascii: herd's 'cpu µs/conn' is printed as 'cpu us/conn'; nothing is lost."""
    saved = tmp_path / "herd.json"
    args = ["herd", "--modes", "epoll", "-w", "2", "-n", "3", "--json", str(saved)]
    result = CliRunner(charset="ascii").invoke(main, args, env={"COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 0, result.stderr
    assert "cpu us/conn" in result.stdout
    assert result.stderr.splitlines() == [f"wrote {saved}"]
    assert kind_of(saved) == "herd"


def test_help_to_a_full_stdout_is_one_line_and_to_a_closed_pipe_is_quiet() -> None:
    """click prints --help itself: the same rules as a report (click alone: a traceback, and exit 1)."""
    with open("/dev/full", "wb") as full:
        proc = accept_order("run", "--help", stdout=full)
        _, err = proc.communicate(timeout=TIMEOUT_S)
    assert (proc.returncode, err.decode()) == (
        1,
        "accept-order: error: cannot write to stdout: No space left on device\n",
    )
    read, write = os.pipe()
    os.close(read)  # no reader, before anything is written
    proc = accept_order("run", "--help", stdout=write)
    os.close(write)
    _, err = proc.communicate(timeout=TIMEOUT_S)
    assert (proc.returncode, err.decode()) == (141, "")
