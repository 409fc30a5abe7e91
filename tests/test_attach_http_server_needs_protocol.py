"""--attach at a server known to wait for an HTTP request, without --protocol, is refused before any connection:
'latency --attach <gunicorn> --port 8000 -n 300 -c 5' (PyPI's gunicorn 27, 3 sync workers; the first-hour persona's
first try, --protocol left out) ran 13 minutes, every connection waiting out its 5 s timeout, before it said 'served
nothing: 300 × timeout ... needs --protocol http' (at the default -n 100000, days). The kind is read from /proc as
inspect reads it; --protocol line given is honoured, and this tool's own workers, which write first, are let through.

The servers are real: PyPI's gunicorn (the test extra's), whose access log is the witness that the refused run sent
it nothing, and 'accept-order serve'."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runs import ran_in_process
from conftest import OutputReader
from gunicorn_by_hand import gunicorn_by_hand

TIMEOUT_S = 30.0
HEARTBEAT = re.compile(r"accept-order: (?!error: |warning: ).*\b[\d.]+ s elapsed(, about .* left)?")  # cli/progress's
APP = """
def app(environ, start_response):
    start_response("200 OK", [("Content-Length", "6")])
    return [b"hello\\n"]
"""


@pytest.fixture
def gunicorn(tmp_path: Path) -> Iterator[tuple[int, int, Path]]:
    with gunicorn_by_hand(APP, tmp_path, 2, TIMEOUT_S) as started:
        yield started.master, started.port, started.access_log


def _requests(access: Path) -> int:
    return len(access.read_text().splitlines()) if access.exists() else 0


@pytest.mark.parametrize("command", ["run", "latency"])
def test_attach_at_gunicorn_without_protocol_is_refused_before_a_connection(
    gunicorn: tuple[int, int, Path], command: str
) -> None:
    pid, port, access = gunicorn
    done = ran_in_process(command, "--attach", str(pid), "--port", str(port), "-n", "2", "--timeout", "200ms")
    assert done.returncode == 2, done
    assert done.stderr.splitlines() == [
        f"accept-order: error: --attach: pid {pid} is gunicorn, which as an HTTP server waits for a request before "
        "it answers, and --protocol line (the default) sends nothing, so every connection would wait out --timeout: "
        f"give --protocol http, or --protocol line if this one writes first unasked (see 'accept-order {command} "
        "--help')"
    ], done.stderr
    assert done.stdout == ""
    served = ran_in_process("run", "--attach", str(pid), "--port", str(port), "-n", "2", "--protocol", "http")
    assert served.returncode == 0 and "served 2, failed 0" in served.stdout, served
    assert _requests(access) == 2  # the server's own log: the two of the run with --protocol http, none before


def test_protocol_line_given_is_honoured(gunicorn: tuple[int, int, Path]) -> None:
    pid, port, access = gunicorn
    done = ran_in_process("run", "--attach", str(pid), "--port", str(port), "-n", "1", "--protocol", "line")
    assert done.returncode == 1, done  # honoured, and then it served nothing: the report, then why (exit 1)
    assert "served 0, failed 1" in done.stdout and "--protocol http" in done.stdout, done.stdout
    # off a terminal a run past 10 s says how far on stderr ('accept-order: 10 s elapsed'): this one waits out its
    # 5-s timeout, and at load ~14 it took longer; the error is then the last line, after those beats
    *beats, error = done.stderr.splitlines()
    assert all(HEARTBEAT.fullmatch(beat) for beat in beats), done.stderr
    assert error.startswith("accept-order: error: served nothing: 1 × timeout"), done.stderr
    assert _requests(access) == 0


def test_this_tools_own_workers_write_first_and_are_let_through(free_port: int) -> None:
    # by its own command, as a user starts it: /proc then names it this tool's (python -m names no kind)
    serve = subprocess.Popen(
        [str(Path(sys.executable).with_name("accept-order")), "serve", "-w", "2", "--port", str(free_port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None
        banner = OutputReader(serve.stdout)
        banner.wait_for(r"try: ", TIMEOUT_S)  # its banner's last line: listening by then
        done = ran_in_process("run", "--attach", str(serve.pid), "--port", str(free_port), "-n", "2")
        assert done.returncode == 0 and "served 2, failed 0" in done.stdout, done
    finally:
        serve.terminate()
        serve.wait(TIMEOUT_S)
        if serve.stdout is not None:
            serve.stdout.close()
