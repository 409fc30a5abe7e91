"""run --attach --protocol http reads a reply to its framed end (c8d1b81), and a reply with nothing to frame must
still end there: Debian's nginx answering 'return 204' over keep-alive (no Content-Length, none allowed) read
'3 × timeout: no answer within 3 s' after 3 s each, and a Node net server writing '220 hello' and holding the
connection read '2 × timeout' where 'bad reply (not an HTTP answer)' was said at once before. A 204 or 304 has no
body (RFC 9112 §6.3), and data that does not begin as an HTTP status line is not an HTTP answer, whole as read.

The servers are real (Debian's nginx and node); their own logs are the witnesses that each connection was answered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runs import Ran, ran_in_process
from conftest import OutputReader
from nginx_by_hand import nginx_by_hand
from node_script import node_script

from accept_order.core.protocol import HTTP_KEEPALIVE

TIMEOUT_S = 30.0
NGINX_204 = """daemon off;
worker_processes {workers};
pid {d}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/cb; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f;
    uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;
    server {{ listen 127.0.0.1:{port}; location / {{ return 204; }} }}
}}
"""
GREETER = """
const net = require('net');
const server = net.createServer(s => {
  s.on('error', () => {});
  console.log('connection');
  s.write('220 hello\\r\\n');  // and holds the connection open
});
server.listen(0, '127.0.0.1', () => console.log('listening ' + server.address().port));
"""


def run_http(pid: int, port: int, n: int) -> Ran:
    # --timeout far above what either answer takes: a run that waited for a body would fail by it, not pass
    args = ["run", "--attach", str(pid), "--port", str(port), "--protocol", "http", "-n", str(n), "--timeout", "20s"]
    return ran_in_process(*args)


@pytest.mark.parametrize(
    ("reply", "end"),
    [
        (b"HTTP/1.1 204 No Content\r\nServer: nginx\r\nConnection: keep-alive\r\n\r\n", 66),
        (b"HTTP/1.1 304 Not Modified\r\nETag: x\r\n\r\n", 38),
        (b"220 hello\r\n", 11),
        (b"HTT", 0),  # the start of a status line: more to come
        (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok", 0),  # one byte of its body still to come
    ],
)
def test_reply_end(reply: bytes, end: int) -> None:
    assert HTTP_KEEPALIVE.reply_end(reply) == end


def test_a_204_ends_at_its_head(free_port: int) -> None:
    with nginx_by_hand(NGINX_204, free_port, 2, TIMEOUT_S) as nginx:
        done = run_http(nginx.master, free_port, 3)
        assert done.returncode == 1, done  # served nothing: a 204 names no worker
        assert "3 × bad reply (HTTP 204)" in done.stdout, done.stdout
        assert "timeout" not in done.stdout, done.stdout
        log = nginx.access_log.read_text().splitlines()
        assert len(log) == 3 and all('"GET / HTTP/1.1" 204 0' in line for line in log), log


@pytest.fixture
def greeter(tmp_path: Path) -> Iterator[tuple[int, int, OutputReader]]:
    with node_script(GREETER, tmp_path, TIMEOUT_S) as started:
        yield started


def test_a_greeting_held_open_is_not_an_http_answer(greeter: tuple[int, int, OutputReader]) -> None:
    pid, port, log = greeter
    done = run_http(pid, port, 2)
    assert done.returncode == 1, done
    assert "2 × bad reply (not an HTTP answer)" in done.stdout, done.stdout
    assert "timeout" not in done.stdout, done.stdout
    log.wait_for(r"(?s)connection.*connection", TIMEOUT_S)  # its own log: both answered
