"""A load of one request a connection at a port that speaks HTTP/2 in the clear says so, as a kept load does.

The one-request client reads each answer to the close: nginx's 'listen ... http2' (no ssl) sends its SETTINGS frame
and a GOAWAY, which is 'bad reply (not an HTTP answer)', not the kept client's 'no reply'. c5d955c asked the port
for h2c only after failures a kept load gives, so 'latency --attach PID --port PORT --protocol http' (no --pool)
said only 'served nothing: 9754 × bad reply (not an HTTP answer)', and 'run --attach' 'Verdict: nothing served'.
"""

from __future__ import annotations

from conftest import assert_one_error_line, run_cli
from nginx_by_hand import nginx_by_hand
from test_attach_h2c_port import ATTACH, NGINX_H2C, TIMEOUT_S

H2C_SAID = "speaks HTTP/2 without TLS (h2c: it answered the HTTP/2 preface with a SETTINGS frame)"


@ATTACH
def test_latency_and_run_of_one_request_a_connection_say_h2c(free_port: int) -> None:
    with nginx_by_hand(NGINX_H2C, free_port, 2, TIMEOUT_S) as nginx:
        attach = ["--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http"]
        latency = run_cli(["latency", *attach, "-c", "2", "--duration", "1s", "--driver-procs", "1"])
        run = run_cli(["run", *attach, "-n", "4"])
        logged = nginx.access_log.read_text()
    line = assert_one_error_line(latency, 1, "served nothing: ")
    assert "bad reply (not an HTTP answer)" in line, line  # the one-request client's failure, not 'no reply'
    assert f"127.0.0.1:{free_port} {H2C_SAID}" in line, line
    assert "4 × bad reply (not an HTTP answer)" in run.stdout, run.stdout
    assert_one_error_line(
        run, 1, "served nothing: 4 × bad reply (not an HTTP answer)", f"127.0.0.1:{free_port} {H2C_SAID}"
    )
    assert " 200 " not in f" {logged} ", logged  # the witness: nginx served the loads nothing
