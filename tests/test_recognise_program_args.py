"""A program this tool does not know is not taken for a server its arguments name.

registry.recognise read the first three words of a command line, then, where they named none, the word after `--`:
`python app.py nginx` and `python app.py -- nginx` (a program of the user's, given a server's name) were nginx, so
inspect, observe and latency --attach would have read them with nginx's rules (its modes, its cures, its threads
taken as not serving). The program a command line runs is its first argument, or, for an interpreter, the module,
code or script it runs; a wrapper (Server::Starter's start_server, h2o's master under Debian's unit) runs the command
after its `--`. Witness: the real process's command line in /proc.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import OutputReader

from accept_order.experiments.inspect.run import inspect
from accept_order.experiments.observe.observer import recognised_kind
from accept_order.experiments.observe.server import find_server
from accept_order.probes.serving import process_info
from accept_order.servers.registry import recognise

# a parent and one forked child blocked in accept(): a server inspect and observe can read
APP = """
import os, socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
if os.fork() == 0:
    while True:
        s.accept()[0].close()
print(s.getsockname()[1], flush=True)
os.wait()
"""


@pytest.fixture(params=[("--", "nginx"), ("nginx",)], ids=["after-dashes", "argument"])
def users_program(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[int, int]]:
    """(pid, port) of `python app.py -- nginx` (or `python app.py nginx`), once it listens."""
    app = tmp_path / "app.py"
    app.write_text(APP)
    proc = subprocess.Popen(
        [sys.executable, str(app), *request.param], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        port = int(OutputReader(proc.stdout).wait_for(r"(\d+)\n", 30)[1])
        yield proc.pid, port
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def test_a_users_program_given_a_servers_name_is_not_that_server(users_program: tuple[int, int]) -> None:
    pid, port = users_program
    info = process_info(pid)
    assert info is not None and info.argv[-1] == "nginx" and info.argv[1].endswith("app.py"), info  # the witness
    assert recognise(info.name, info.argv) is None, info
    assert inspect(pid=pid, samples=1).recognised is None
    assert recognised_kind(find_server(port=port)) is None


@pytest.mark.parametrize(
    ("name", "argv", "expected"),
    [
        ("python3", ("python3", "app.py", "nginx"), None),
        ("python3", ("python3", "-u", "app.py", "--", "nginx"), None),
        ("myserver", ("./myserver", "--", "haproxy"), None),
        # Debian's h2o unit (h2o -m master): Server::Starter runs h2o
        ("perl", ("perl", "-x", "/usr/share/h2o/start_server", "--port=127.0.0.1:80", "--", "/usr/bin/h2o", "-c", "c"),
         "h2o"),
        # Server::Starter installed with its own #! line, wrapping an interpreter
        ("start_server", ("/usr/bin/perl", "/usr/local/bin/start_server", "--", "python3", "-m", "uvicorn", "a:b"),
         "uvicorn"),
        ("python3", ("python3", "-m", "gunicorn", "-c", "conf", "app:app"), "gunicorn"),
        ("python3", ("python3", "-X", "dev", "-mgranian", "app:app"), "granian"),
        ("gunicorn", ("/usr/bin/python3", "/usr/bin/gunicorn", "app:app"), "gunicorn"),
        ("python3", ("python3", "-c", "import sys, pyuwsgi; sys.exit(pyuwsgi.run())", "--ini", "u.ini"), "uwsgi"),
        ("ruby", ("ruby", "-r", "bundler/setup", "/usr/bin/puma", "config.ru"), "puma"),
        ("nginx", ("nginx: worker process",), "nginx"),
        ("ruby", ("puma 6.4.2 (tcp://127.0.0.1:9292) [app]",), "puma"),
        ("uvicorn", ("uvicorn", "main:app", "--", "nginx"), "uvicorn"),
    ],
)  # fmt: skip
def test_the_program_a_command_line_runs_names_it(name: str, argv: tuple[str, ...], expected: str | None) -> None:
    kind = recognise(name, argv)
    assert (kind.name if kind is not None else None) == expected
