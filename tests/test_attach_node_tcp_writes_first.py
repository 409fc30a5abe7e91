"""--attach without --protocol at a process /proc names as one of the HTTP kinds is refused (e5e3204), but the name
says which program runs, not what it speaks: a Node `net` server that writes a greeting first was told 'pid P is
node, which waits for an HTTP request before it answers: give --protocol http', and --protocol http then failed
every connection as a bad reply. The refusal names --protocol line for a server that writes first unasked, and
that way out serves.

The server is Debian's node running a `net` server that writes and closes; its own log of each connection is the
witness that the refused run sent nothing and the run with --protocol line was served by it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runs import ran_in_process
from conftest import OutputReader
from node_script import node_script

TIMEOUT_S = 30.0
SERVER = """
const net = require('net');
const server = net.createServer(s => {
  s.on('error', () => {});
  console.log('connection');
  s.end('hello from ' + process.pid + '\\n');
});
server.listen(0, '127.0.0.1', () => console.log('listening ' + server.address().port));
"""


@pytest.fixture
def node_tcp(tmp_path: Path) -> Iterator[tuple[int, int, OutputReader]]:
    with node_script(SERVER, tmp_path, TIMEOUT_S) as started:
        yield started


def test_node_writing_first_is_told_protocol_line_and_served_by_it(node_tcp: tuple[int, int, OutputReader]) -> None:
    pid, port, log = node_tcp
    refused = ran_in_process("run", "--attach", str(pid), "--port", str(port), "-n", "2", "--timeout", "200ms")
    assert refused.returncode == 2, refused
    [line] = refused.stderr.splitlines()
    assert line.startswith(f"accept-order: error: --attach: pid {pid} is node, "), line
    assert "give --protocol http, or --protocol line if this one writes first unasked" in line, line
    assert "which waits for an HTTP request" not in line  # not said of a program by its name alone
    served = ran_in_process("run", "--attach", str(pid), "--port", str(port), "-n", "2", "--protocol", "line")
    assert served.returncode == 0 and "served 2, failed 0" in served.stdout, served
    # the server's own log: the two connections of the run with --protocol line, none of the refused one
    log.wait_for(r"(?s)connection.*connection", TIMEOUT_S)
    assert log.text.count("connection") == 2, log.text
