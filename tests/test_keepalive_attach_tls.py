"""latency --attach at an HTTPS port says the port speaks TLS: the load speaks plain HTTP/1.1, and nginx with
'listen ... ssl http2' answered it '400 The plain HTTP request was sent to HTTPS port', which latency put down to
'/' ('the server answered 'GET /' with a status other than 200: ... --port must be where '/' answers 200 with a
body'); h2o and HAProxy with TLS close without a word, and latency said only 'served nothing: 7768 × no reply'.
The port's own handshake is asked now (probes/tls_hello), and a plain server's 400 keeps the '/' sentence."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import OutputReader, assert_one_error_line, run_cli
from nginx_by_hand import nginx_by_hand, one_server_conf
from test_analysis import sequential

from accept_order.analysis import order
from accept_order.core.protocol import HTTP
from accept_order.core.target import ReplyAttribution
from accept_order.experiments.target_unanswered import tls_note
from accept_order.loads.sequential_books import Books
from accept_order.probes.tls_hello import TlsSpoken, speaks_tls

TIMEOUT_S = 20.0
PID = os.getpid()  # a worker's pid for the attribution: no reply here names it
ATTACH = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")
OPENSSL = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")

NGINX_TLS = one_server_conf(
    "$status",
    listen=" ssl http2",
    server=["ssl_certificate {d}/cert.pem;", "ssl_certificate_key {d}/key.pem;"],
)

# A process of its own (--attach wants a pid): TLS on a port, closing any connection whose handshake fails, as
# h2o and HAProxy do with a plain request (here a reset: the request is left unread); or plain, answering 400 (or
# 404) to everything (a server refusing '/'), and printing each request's first word ('not HTTP': a ClientHello).
SERVER = r"""
import socket, ssl, sys
listener = socket.create_server(("127.0.0.1", 0), backlog=64)
context = None
status = {"plain": b"400 Bad Request", "404": b"404 Not Found"}.get(sys.argv[1])
if status is None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
print("port", listener.getsockname()[1], flush=True)
while True:
    conn, _ = listener.accept()
    try:
        conn.settimeout(5)
        if context is None:
            word = conn.recv(4096).split(b" ", 1)[0]
            print("request", word.decode() if word.isalpha() else "not HTTP", flush=True)
            conn.sendall(b"HTTP/1.1 " + status + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        else:
            context.wrap_socket(conn, server_side=True).close()
    except (OSError, ssl.SSLError):
        pass
    conn.close()
"""


def certificate(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"]
        + ["-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


def served_with_output(*args: str) -> Iterator[tuple[int, int, OutputReader]]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, *args], stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        assert proc.stdout is not None
        output = OutputReader(proc.stdout)
        port = int(output.wait_for(r"port (\d+)\n", TIMEOUT_S).group(1))
        yield proc.pid, port, output
    finally:
        proc.kill()
        proc.wait(10)
        assert proc.stdout is not None
        proc.stdout.close()


def serving(*args: str) -> Iterator[tuple[int, int]]:
    for pid, port, _ in served_with_output(*args):
        yield pid, port


@pytest.fixture
def tls_closing(tmp_path: Path) -> Iterator[tuple[int, int]]:
    yield from serving(*map(str, certificate(tmp_path)))


@pytest.fixture
def plain_400() -> Iterator[tuple[int, int]]:
    yield from serving("plain")


def attach(pid: int, port: int) -> list[str]:
    return ["latency", "--attach", str(pid), "--port", str(port), "--protocol", "http", "-n", "20", "-c", "2"]


@OPENSSL
def test_the_handshake_tells_a_tls_port_from_a_plain_one(tls_closing: tuple[int, int]) -> None:
    spoken = speaks_tls("127.0.0.1", tls_closing[1])
    assert spoken is not None and spoken.version.startswith("TLSv1.")
    with socket.create_server(("127.0.0.1", 0)) as plain:  # listens; never answers: the handshake times out
        assert speaks_tls("127.0.0.1", plain.getsockname()[1], timeout_s=0.5) is None


@ATTACH
@OPENSSL
def test_nginx_https_port_is_said_to_speak_tls(tmp_path: Path, free_port: int) -> None:
    certificate(tmp_path)
    with nginx_by_hand(
        NGINX_TLS.replace("{d}/cert.pem", f"{tmp_path}/cert.pem").replace("{d}/key.pem", f"{tmp_path}/key.pem"),
        free_port,
        2,
        TIMEOUT_S,
    ) as nginx:
        result = run_cli([*attach(nginx.master, free_port), "--driver-procs", "1"])
        line = assert_one_error_line(result, 1)
        statuses = nginx.access_log.read_text().split()
    assert statuses and set(statuses) == {"400"}  # the witness: nginx refused each plain request
    # the per-worker table counts the kernel's accepts: refused connections are none served
    assert f"the connections each accepted, failed or not ({len(statuses)} failed, below)" in result.stdout
    assert "bad reply (HTTP 400)" in line, line
    assert f"127.0.0.1:{free_port} speaks TLS (TLSv1." in line and "ALPN h2: HTTP/2" in line, line
    assert "plain-HTTP listener" in line, line
    assert "a connection counts as served on a 200 only" not in line, line


@ATTACH
@OPENSSL
def test_a_tls_port_that_closes_is_said_to_speak_tls(tls_closing: tuple[int, int]) -> None:
    pid, port = tls_closing
    line = assert_one_error_line(run_cli([*attach(pid, port), "--driver-procs", "1"]), 1, "served nothing: 20 × ")
    assert f"127.0.0.1:{port} speaks TLS (TLSv1." in line and "no ALPN" in line, line
    assert "and --port that one (" in line, line  # attached: --port picks its listener


@ATTACH
def test_a_plain_server_refusing_slash_keeps_its_sentence(plain_400: tuple[int, int]) -> None:
    pid, port = plain_400
    line = assert_one_error_line(run_cli([*attach(pid, port), "--driver-procs", "1"]), 1, "bad reply (HTTP 400)")
    assert "a connection counts as served on a 200 only" in line, line
    assert "speaks TLS" not in line, line


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (
            b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n<html>plain HTTP to HTTPS port</html>",
            "bad reply (HTTP 400)",
        ),
        (b"HTTP/1.0 200 OK\r\n\r\n", HTTP.complaint(b"HTTP/1.0 200 OK\r\n\r\n")),  # the protocol's own words
        (b"", "closed without a reply"),
    ],
)
def test_run_names_an_http_reply_by_its_status(reply: bytes, said: str) -> None:
    """run's sequential client said 'closed without a reply' of nginx's 400 (its log the witness: a 400 sent)."""
    target = SimpleNamespace(attribution=ReplyAttribution((PID,)), pids=[PID], protocol=HTTP)
    one, other = socket.socketpair()
    with one, other:
        assert Books(target, None, None).worker_of(reply, one, 0) == (None, said)  # type: ignore[arg-type]


@ATTACH
@OPENSSL
def test_run_attached_to_nginx_https_names_its_400(tmp_path: Path, free_port: int) -> None:
    certificate(tmp_path)
    conf = NGINX_TLS.replace("{d}/cert.pem", f"{tmp_path}/cert.pem").replace("{d}/key.pem", f"{tmp_path}/key.pem")
    with nginx_by_hand(conf, free_port, 2, TIMEOUT_S) as nginx:
        result = run_cli(
            ["run", "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http", "-n", "3"]
        )
        statuses = nginx.access_log.read_text().split()
    assert statuses == ["400"] * 3  # the witness
    assert "3 × bad reply (HTTP 400)" in result.stdout, result.output
    assert "closed without a reply" not in result.stdout, result.output
    assert_one_error_line(
        result, 1, "served nothing: 3 × bad reply (HTTP 400)", f"127.0.0.1:{free_port} speaks TLS (TLSv1."
    )


@ATTACH
@OPENSSL
def test_run_attached_to_a_tls_port_that_closes_says_it_speaks_tls(tls_closing: tuple[int, int]) -> None:
    pid, port = tls_closing
    result = run_cli(["run", "--attach", str(pid), "--port", str(port), "--protocol", "http", "-n", "3"])
    assert "served 0, failed 3" in result.stdout, result.output
    assert "Verdict: nothing served" in result.stdout, result.output  # one worker: it read 'single worker'
    assert_one_error_line(result, 1, "served nothing: 3 × ", f"127.0.0.1:{port} speaks TLS (TLSv1.")


@ATTACH
def test_run_attached_to_a_plain_400_says_nothing_of_tls(plain_400: tuple[int, int]) -> None:
    pid, port = plain_400
    result = run_cli(["run", "--attach", str(pid), "--port", str(port), "--protocol", "http", "-n", "3"])
    assert "3 × bad reply (HTTP 400)" in result.stdout, result.output
    assert "speaks TLS" not in result.output, result.output


def test_run_counts_no_http_error_served_by_whoever_accepted_it() -> None:
    """With the kernel's accept log (an attached server), a 400 was put down to the worker that accepted it
    whenever the log answered in time: 1 of nginx's three 400s read served in about 1 run of 5."""
    target = SimpleNamespace(attribution=ReplyAttribution((PID,)), pids=[PID], protocol=HTTP)
    # the log names the accepting worker
    accepts = SimpleNamespace(accepted_by=lambda port, since_ns, server_port=None: PID)
    with socket.create_server(("127.0.0.1", 0)) as listener, socket.create_connection(listener.getsockname()) as one:
        books = Books(target, None, accepts)  # type: ignore[arg-type]
        assert books.worker_of(b"HTTP/1.1 400 Bad Request\r\n\r\n", one, 0) == (None, "bad reply (HTTP 400)")
        assert books.worker_of(b"HTTP/1.1 200 OK\r\n\r\nhello, world\n", one, 0) == (0, None)  # a page: its acceptor


@OPENSSL
@pytest.mark.parametrize("command", [["burst", "--clients", "6"], ["ramp", "--rates", "50", "--step", "300ms"]])
def test_burst_and_ramp_at_a_tls_target_say_it_speaks_tls(tls_closing: tuple[int, int], command: list[str]) -> None:
    """burst and ramp --target said only 'failed ... 6' and exited 0 (their reports are read again by show, so the
    line is the command's, after the report: the one error line of a load that served nothing, exit 1)."""
    _, port = tls_closing
    result = run_cli([*command, "--target", f"127.0.0.1:{port}", "--protocol", "http", "--driver-procs", "1"])
    assert_one_error_line(result, 1, "served nothing: ", f"127.0.0.1:{port} speaks TLS (TLSv1.")
    assert "and --target that address (" in result.stderr, result.output  # '--port' with --target: a usage error
    assert "--port" not in result.stderr, result.output


@pytest.mark.parametrize("command", [["burst", "--clients", "6"], ["ramp", "--rates", "50", "--step", "300ms"]])
def test_burst_and_ramp_at_a_plain_400_say_nothing_of_tls(plain_400: tuple[int, int], command: list[str]) -> None:
    _, port = plain_400
    result = run_cli([*command, "--target", f"127.0.0.1:{port}", "--protocol", "http", "--driver-procs", "1"])
    assert_one_error_line(result, 1, "served nothing: ", "bad reply (HTTP 400)")  # served none: exit 1
    assert "speaks TLS" not in result.output, result.output


def test_one_worker_that_served_nothing_is_nothing_served() -> None:
    assert order.verdict(sequential([None, None, None]), 1, "fifo", "why").pattern == "nothing served"
    assert order.verdict(sequential([0, 0]), 1, "fifo", "why").pattern == "single worker"


def test_a_plain_404_is_not_asked_for_a_handshake() -> None:
    """The handshake is a connection the server sees: a burst at a plain nginx whose '/' answers 404 put a 400 of
    the probe's ClientHello in its access log (51 lines for 50 connections). No TLS port answers plain HTTP 404."""
    for _, port, output in served_with_output("404"):
        result = run_cli(["burst", "--clients", "6", "--target", f"127.0.0.1:{port}", "--protocol", "http"])
        assert_one_error_line(result, 1, "served nothing: 6 × bad reply (HTTP 404)")
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as marker:  # served after all before it
            marker.sendall(b"MARK /\r\n\r\n")
            output.wait_for(r"request MARK\n", TIMEOUT_S)
        assert "bad reply (HTTP 404) 6" in result.stdout, result.output
        assert "request not HTTP" not in output.text, output.text  # the witness: no ClientHello came


def test_an_ipv6_port_is_named_as_target_takes_it() -> None:
    """'burst --target [::1]:18643' at nginx's 'listen [::1]:18643 ssl http2' read '::1:18643 speaks TLS'."""
    server = SimpleNamespace(host="::1", port=18643, kind="remote", attach=())
    note = tls_note(server, TlsSpoken("TLSv1.2", "h2"))  # type: ignore[arg-type]
    assert note.startswith("[::1]:18643 speaks TLS (TLSv1.2, ALPN h2: HTTP/2)"), note
