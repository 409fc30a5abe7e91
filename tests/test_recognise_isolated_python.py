"""38d4920 (registry.recognise reads the program an interpreter runs): it took python's -I for an option
that takes a value, as ruby's and perl's -I do, so `python3 -I /usr/bin/gunicorn` ran no program it knew, and
inspect, observe and latency --attach read a gunicorn so started with no kind (before 38d4920 the first three words
named it). Python's -I (isolated mode) takes none. Witness: a real gunicorn started so, /proc's command line and
its own log line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import OutputReader

from accept_order.probes.proc_processes import process_info
from accept_order.servers.registry import recognise

GUNICORN = Path(sys.executable).parent / "gunicorn"
APP = 'def app(environ, start_response):\n    start_response("200 OK", [])\n    return [b"ok"]\n'


@pytest.fixture
def isolated_gunicorn(tmp_path: Path) -> Iterator[int]:
    """The master of `python -I .../gunicorn app:app`, once it listens."""
    if not GUNICORN.exists():
        pytest.skip("gunicorn is not installed beside this python")
    (tmp_path / "app.py").write_text(APP)
    command = [sys.executable, "-I", str(GUNICORN), "--chdir", str(tmp_path), "-b", "127.0.0.1:0", "app:app"]
    # HOME and XDG_RUNTIME_DIR: gunicorn 24+'s control socket (~/.gunicorn/gunicorn.ctl) in the test's directory
    env = {**os.environ, "HOME": str(tmp_path), "XDG_RUNTIME_DIR": str(tmp_path)}
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)
    try:
        assert proc.stderr is not None
        OutputReader(proc.stderr).wait_for(r"Listening at: http://127\.0\.0\.1:\d+", 30)  # gunicorn's own log
        yield proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def test_a_gunicorn_run_by_an_isolated_python_is_gunicorn(isolated_gunicorn: int) -> None:
    info = process_info(isolated_gunicorn)
    assert info is not None and info.argv[1:3] == ("-I", str(GUNICORN)), info  # the witness: /proc's command line
    assert info.name != "gunicorn"  # the interpreter's name: the program is told by the script it runs
    kind = recognise(info.name, info.argv)
    assert kind is not None and kind.name == "gunicorn", info


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("python3", "-I", "/usr/bin/gunicorn", "app:app"), "gunicorn"),
        (("python3", "-s", "-I", "/usr/bin/uvicorn", "main:app"), "uvicorn"),
        (("python3", "-I", "app.py", "gunicorn"), None),  # the user's program, given a server's name
        (("ruby", "-I", "lib", "/usr/bin/puma"), "puma"),  # ruby's -I takes a directory
        (("ruby", "-E", "UTF-8", "/usr/bin/unicorn"), "unicorn"),  # and -E an encoding
        (("ruby", "-I", "gunicorn", "app.rb"), None),
        (("perl", "-I", "/opt/lib", "-x", "/usr/share/h2o/start_server", "--", "/usr/bin/h2o"), "h2o"),
    ],
)
def test_each_interpreters_options_take_their_own_values(argv: tuple[str, ...], expected: str | None) -> None:
    kind = recognise(argv[0], argv)
    assert (kind.name if kind is not None else None) == expected
