"""--protocol's help says what http means for run and for a load: it read 'http: a keep-alive request, the connection
held open until the worker holding it is found' in every command, where latency, sweep, burst and ramp read each
reply to its end and count an attached server's workers by the kernel's accepts (run alone holds each connection
until its holder is found: what the first-hour persona, attaching latency to gunicorn, was told it did)."""

from __future__ import annotations

import pytest
from conftest import run_cli


@pytest.mark.parametrize("command", ["run", "latency", "sweep", "burst", "ramp"])
def test_protocol_http_says_run_holds_and_a_load_reads_to_the_end(command: str) -> None:
    said = " ".join(run_cli([command, "--help"], columns=400).output.split())
    assert (
        "http: it answers a request 'GET /' with a 200 and a body; run holds each connection open until the worker "
        "holding it is found, a load reads each reply to its end)" in said
    ), said
    assert "keep-alive request, the connection held open" not in said
