"""A 200 with an empty body (nginx's 'location = / { return 200; }', Content-Length: 0 to curl, 201 lines of 200
in its access log) was named 'bad reply (a 200 whose body names no worker of this server)' by latency --attach
and run --attach, where an attached server's body need name no worker (the kernel's accepts attribute it): any body
would have been served. It is now 'a 200 with an empty body', and latency's error line says what '/' must answer."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
from conftest import assert_one_error_line, run_cli
from listening_process import replying

from accept_order.core.protocol import HTTP, HTTP_KEEPALIVE
from accept_order.core.spec import REMOTE_KIND, ServerSpec
from accept_order.experiments.target_unanswered import NOTE, target_unanswered_note

EMPTY = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def test_an_empty_200_is_named_so() -> None:
    assert HTTP.failure(EMPTY, HTTP.body(EMPTY)) == "bad reply (a 200 with an empty body)"
    assert HTTP_KEEPALIVE.complaint(EMPTY) == "bad reply (a 200 with an empty body)"  # the kept connections' loop
    page = b"HTTP/1.1 200 OK\r\n\r\nhello\n"  # a body, naming no worker: what --target's replies must do
    assert HTTP.complaint(page) == "bad reply (a 200 whose body names no worker of this server)"
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"  # its last chunk alone: empty
    assert HTTP_KEEPALIVE.complaint(chunked) == "bad reply (a 200 with an empty body)"
    cut = b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 5000  # a head cut off by the bytes read: its body is not known
    assert HTTP.complaint(cut) == "bad reply (a 200 whose body names no worker of this server)"


@pytest.fixture
def empty_200() -> Iterator[tuple[int, int]]:
    with replying(EMPTY) as server:
        yield server


@pytest.fixture
def moved() -> Iterator[tuple[int, int]]:
    with replying(b"HTTP/1.1 301 Moved Permanently\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n") as server:
        yield server


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")
def test_attach_says_slash_must_answer_with_a_body(empty_200: tuple[int, int]) -> None:
    pid, port = empty_200
    args = ["latency", "--attach", str(pid), "--port", str(port), "--protocol", "http", "-n", "20", "-c", "2"]
    line = assert_one_error_line(
        run_cli([*args, "--driver-procs", "1"]), 1, "served nothing: 20 × bad reply (a 200 with an empty body)"
    )
    assert "answered 'GET /' with a 200 and an empty body" in line and "names no worker" not in line, line


@pytest.mark.parametrize(("server", "said"), [("empty_200", "a 200 with an empty body"), ("moved", "HTTP 301")])
def test_target_says_what_slash_must_answer(request: pytest.FixtureRequest, server: str, said: str) -> None:
    """--target at nginx's 'return 301' said '50 × bad reply (HTTP 301)' and nothing of what to do."""
    _, port = request.getfixturevalue(server)
    args = ["latency", "--target", f"127.0.0.1:{port}", "--protocol", "http", "-n", "20", "-c", "2"]
    line = assert_one_error_line(run_cli([*args, "--driver-procs", "1"]), 1, f"served nothing: 20 × bad reply ({said})")
    assert "--target counts a connection as served on a 200 whose body reads 'worker PID'" in line, line


@pytest.mark.parametrize(
    ("failed", "noted"),
    [
        ("bad reply (HTTP 301)", True),  # burst and ramp at nginx's 'return 301' said only the status's name
        ("bad reply (a 200 with an empty body)", True),
        ("bad reply", True),
        ("bad reply (HTTP 400)", False),  # a TLS port's answer: unserved_tls asks the port
        ("ECONNRESET", False),
    ],
)
def test_burst_and_ramps_note_on_a_target_answering_no_worker(failed: str, noted: bool) -> None:
    target = ServerSpec(kind=REMOTE_KIND, mode=REMOTE_KIND, workers=2, host="127.0.0.1", port=8080, protocol="http")
    note = target_unanswered_note(target, [(0, {failed: 20})])
    assert (note is not None and note.plain == NOTE) if noted else note is None, note
