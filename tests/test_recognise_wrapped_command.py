"""Review RD2 of a123505: the command a wrapper runs after `--` names the server only where the process's own name
and first three arguments name none.

a123505 put the word after `--` in one set with the process's own words, and the first kind in KINDS that any of
them named won: a Node program started `node app.js -- nginx` (its own arguments after `--`) was recognised as nginx
(nginx comes before node), so inspect and observe would have read it with nginx's rules. Witness: the real Node
process's name and command line, as /proc gives them.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from conftest import wait_for

from accept_order.probes.serving import process_info
from accept_order.servers.registry import recognise

NODE = shutil.which("node") or shutil.which("nodejs")


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_a_node_program_given_a_servers_name_after_dashes_is_node() -> None:
    assert NODE is not None
    proc = subprocess.Popen([NODE, "-e", "setInterval(() => {}, 1 << 30)", "--", "nginx"])
    try:
        info = wait_for(
            lambda: process_info(proc.pid), lambda i: i is not None and "--" in i.argv, 15.0, "node's command line"
        )
        assert info is not None and info.argv[-2:] == ("--", "nginx"), info
        kind = recognise(info.name, info.argv)
        assert kind is not None and kind.name == "node", (info, kind)
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.parametrize(
    ("name", "argv", "expected"),
    [
        ("uvicorn", ("uvicorn", "main:app", "--", "nginx"), "uvicorn"),  # its own name first
        ("perl", ("perl", "-x", "/usr/share/h2o/start_server", "--port=127.0.0.1:80", "--", "h2o", "-c", "c"), "h2o"),
        ("perl", ("perl", "-x", "/usr/share/h2o/start_server", "--", "/usr/bin/h2o", "-m", "worker"), "h2o"),
        ("perl", ("perl", "-x", "/usr/share/h2o/start_server", "--port=80", "--"), None),  # nothing after
    ],
)
def test_the_wrapped_command_decides_only_where_nothing_before_it_does(
    name: str, argv: tuple[str, ...], expected: str | None
) -> None:
    kind = recognise(name, argv)
    assert (kind.name if kind is not None else None) == expected
