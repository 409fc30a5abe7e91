"""The advice for a port that speaks HTTP/2 without TLS (or TLS) names the server found there, not nginx alone.

'latency --attach HAPROXY --port P --protocol http' at HAProxy's 'bind ... proto h2' said it speaks h2c, then
'(nginx: listen 127.0.0.1:8080; in the same server block ...)': the only words there were, whatever the server.
Now an attached server is named as /proc names it (registry.recognise, as inspect does) and told in its own
syntax; a server elsewhere (--target), whose program is not known, gets no one's syntax.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli
from haproxy_by_hand import config, haproxy

from accept_order.core.spec import ServerSpec
from accept_order.experiments.target_unanswered import tls_note
from accept_order.probes.tls_hello import H2cSpoken, TlsSpoken, speaks_h2c

START_TIMEOUT_S = 20.0
ATTACH = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")


def preface_answered(port: int) -> None:
    """HAProxy's start-up as the test asks it, and the witness: the port answers the HTTP/2 preface."""
    if speaks_h2c("127.0.0.1", port) is None:
        raise OSError(f"127.0.0.1:{port} did not answer the HTTP/2 preface")


@ATTACH
def test_an_attached_haproxy_speaking_h2c_is_told_in_haproxys_words(free_port: int, tmp_path: Path) -> None:
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(free_port, threads=1, bind=" proto h2"))
    with haproxy(path, free_port, threads=1, asked=preface_answered) as started:
        attach = ["--attach", str(started.pid), "--port", str(free_port), "--protocol", "http"]
        result = run_cli(["latency", *attach, "-n", "3", "-c", "1", "--driver-procs", "1"])
    line = assert_one_error_line(result, 1, "served nothing: ", f"127.0.0.1:{free_port} speaks HTTP/2 without TLS")
    assert "HAProxy: 'bind 127.0.0.1:8080' in the same frontend, without 'proto h2'" in line, line
    assert "nginx" not in line.split("speaks HTTP/2")[1], line  # its listen syntax is nginx's, not HAProxy's


def test_a_server_elsewhere_gets_no_ones_syntax() -> None:
    server = ServerSpec(kind="remote", host="192.0.2.1", port=8443, protocol="http")
    for spoken, said in ((H2cSpoken(), "HTTP/2 without TLS"), (TlsSpoken("TLSv1.3", "h2"), "TLS (TLSv1.3")):
        line = tls_note(server, spoken)
        assert f"192.0.2.1:8443 speaks {said}" in line and "--target that address" in line, line
        assert "a second listener on a port of its own, plain HTTP/1.1" in line, line
        assert "nginx" not in line and "HAProxy" not in line, line
