"""A client host whose Python is too old for accept-order, or whose ssh session prints before Python, says so in one
line.

With pyenv's interpreters as --client-python on a namespace cluster, 3.8.18, 3.9.18 and 3.10.13 read 'accept-order is
not installed for PYTHON there (No module named 'accept_order'); install accept-order 0.2.0 there', which pip refuses
to do (requires-python >= 3.11), and 2.7.18, 3.6.15 and 3.7.16 read 'its Python PYTHON did not start or answer
(SyntaxError: invalid syntax)', of an interpreter that started and could not parse execnet's bootstrap (execnet 2
runs on 3.8 up). The hello now names the version, and a SyntaxError before it names the cause. Here an interpreter
older than 3.11 is this one with its version_info set back (a sitecustomize), and one older than 3.8 this one given a
line it cannot parse: the test cannot count on old Pythons being installed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from cluster import Cluster, cluster_fixture
from test_clients_faults import LONG, _wrapper, assert_nothing_left, load_args, start

from accept_order.core.version import VERSION
from accept_order.loads.hosts import remote_side

cluster = cluster_fixture(clients=1, server=False)


class Channel:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, message: Any) -> None:
        self.sent.append(message)


def test_the_hello_of_a_python_older_than_accept_order_needs_names_its_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "version_info", (3, 10, 13, "final", 0))
    channel = Channel()
    assert remote_side._hello(channel) is False
    assert channel.sent == [("old", "3.10.13", sys.executable)]


def test_the_oldest_python_of_the_hello_is_the_packages_own() -> None:
    pyproject = Path(__file__).parent.parent / "pyproject.toml"
    [line] = [line for line in pyproject.read_text().splitlines() if line.startswith("requires-python")]
    assert line == f'requires-python = ">={".".join(map(str, remote_side.MIN_PYTHON))}"'


def test_a_host_whose_python_is_older_than_accept_order_needs_is_one_line_naming_its_version(
    cluster: Cluster, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import sys\nsys.version_info = (3, 10, 13, 'final', 0)\n")
    python = _wrapper(tmp_path, "old-python", f'PYTHONPATH={site} exec {sys.executable} "$@"')
    run = start(tmp_path, *load_args(cluster, tmp_path, "c1"), "--client-python", python, *LONG)
    assert run.wait() == 1
    [line] = run.error_lines()
    assert line == (
        f"accept-order: error: client host c1: its Python {sys.executable} is 3.10.13, and accept-order needs "
        f"3.11 or newer: give --client-python one that is, with accept-order {VERSION}"
    ), line
    assert_nothing_left(cluster, str(tmp_path))


def test_a_host_whose_python_cannot_parse_the_bootstrap_is_one_line_saying_it_is_too_old(
    cluster: Cluster, tmp_path: Path
) -> None:
    python = _wrapper(tmp_path, "ancient-python", f"exec {sys.executable} -c 'print(\"walrus\" +)'")
    run = start(tmp_path, *load_args(cluster, tmp_path, "c1"), "--client-python", python, *LONG)
    assert run.wait() == 1
    [line] = run.error_lines()
    assert line == (
        f"accept-order: error: client host c1: its Python {python} could not parse execnet's bootstrap "
        "(SyntaxError: invalid syntax): a Python older than 3.8, and accept-order needs 3.11 or newer: give "
        "--client-python one that is"
    ), line
    assert_nothing_left(cluster, str(tmp_path))


def test_a_host_whose_session_prints_before_python_is_one_line_not_a_traceback(
    cluster: Cluster, tmp_path: Path
) -> None:
    """A host whose login shell prints (an account whose shell is nologin: 'This account is currently not
    available.'; a ~/.bashrc's echo) gave execnet's 'assert s == b"1"' as a traceback; here what runs as its Python
    prints first, as such a shell does."""
    python = _wrapper(tmp_path, "chatty-python", f'echo "Welcome to c1"; exec {sys.executable} "$@"')
    run = start(tmp_path, *load_args(cluster, tmp_path, "c1"), "--client-python", python, *LONG)
    assert run.wait() == 1
    [line] = run.error_lines()
    # the command to try is the run's own: its --ssh-config and --client-python ('ssh c1 true' printed nothing here,
    # and without -F the user's ssh does not know c1)
    assert line.startswith(
        "accept-order: error: client host c1: its ssh session wrote something else before Python answered (a login "
        "shell or startup file that prints, as a ~/.bashrc may, an account with no shell, or a --client-python that "
        f"prints first): 'ssh -F {tmp_path / 'ssh_config'} c1 {python} -c pass' must print nothing"
    ), line
    assert_nothing_left(cluster, str(tmp_path))
