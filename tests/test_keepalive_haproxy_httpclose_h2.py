"""inspect's HAProxy row for 'option httpclose' says it ends HTTP/1 client connections only: it said 'HAProxy
closes each client connection after its answer: no connection outlives its request', and on HAProxy 2.6 with
'bind ... ssl crt ... alpn h2,http/1.1' an HTTP/2 client keeps its connection (h2load -c 8 -m 10 -D 3: the same 8
connections for 576,340 requests), while curl --http1.1 reads 'connection: close'. The real HAProxy, with the
client's own count as the witness: h2load cannot reconnect, so one client's N answers came over one connection."""

from __future__ import annotations

import re
import shutil
import socket
import ssl
import subprocess
from pathlib import Path

import pytest
from conftest import wait_for

from accept_order.servers.registry import KINDS

CONFIG = """global
  nbthread 2
defaults
  mode http
  timeout client 30s
  timeout server 30s
  timeout connect 5s
frontend f
  bind 127.0.0.1:{port} ssl crt {pem} alpn h2,http/1.1
  option httpclose
  http-request return status 200 content-type text/plain string "ok\\n"
"""


def row(setting: str) -> str:
    return next(cure.what for cure in KINDS["haproxy"].cures if cure.setting == setting)


def test_the_row_says_http2_connections_stay_open() -> None:
    what = row("option httpclose")
    assert "each HTTP/1 client connection" in what, what
    assert "an HTTP/2 one (a bind with alpn h2) stays open" in what, what


def kept_requests_http1(port: int) -> int:
    """How many answers one HTTP/1.1 connection over TLS carries when asked for two (1: closed after the first)."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.set_alpn_protocols(["http/1.1"])
    request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    with context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10)) as tls:
        tls.sendall(request)
        first = tls.recv(4096)
        assert first.startswith(b"HTTP/1.1 200"), first
        try:
            tls.sendall(request)
            second = tls.recv(4096)
        except OSError:
            return 1
        return 2 if second.startswith(b"HTTP/1.1 200") else 1


@pytest.mark.skipif(
    not (shutil.which("haproxy") and shutil.which("openssl") and shutil.which("h2load")),
    reason="needs Debian's haproxy, openssl and h2load (nghttp2-client)",
)
def test_haproxy_httpclose_closes_http1_and_keeps_http2(tmp_path: Path, free_port: int) -> None:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"]
        + ["-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    pem = tmp_path / "both.pem"
    pem.write_bytes(cert.read_bytes() + key.read_bytes())
    config = tmp_path / "haproxy.cfg"
    config.write_text(CONFIG.format(port=free_port, pem=pem))
    server = subprocess.Popen(["haproxy", "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:

        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", free_port), timeout=1).close()
            except OSError:
                return False
            return True

        wait_for(lambda: (server.poll(), listening()), lambda s: s[0] is not None or s[1], 10.0, "haproxy listening")
        assert server.poll() is None
        assert kept_requests_http1(free_port) == 1  # HTTP/1: closed after its answer, as the row says
        h2load = subprocess.run(
            ["h2load", "-c", "1", "-m", "1", "-n", "50", f"https://127.0.0.1:{free_port}/"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "Application protocol: h2" in h2load.stdout, h2load.stdout
        done = re.search(r"requests: 50 total, \d+ started, \d+ done, (\d+) succeeded", h2load.stdout)
        assert done is not None and int(done.group(1)) == 50, h2load.stdout  # one connection carried all 50
    finally:
        server.terminate()
        server.wait(10)
        if server.stderr is not None:
            server.stderr.close()
