"""A stdout left non-blocking by whoever made it (a pipe from an event loop) gets the whole output, and a
reader that goes away ends the command with 141 (issue 27 §1). Python's text stream writes what the pipe
takes at once and drops the rest without an error; cli/output.py waits for the pipe instead.

The pipe is made small (one page) so that every output here is larger than it.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data" / "v2"
TIMEOUT_S = 60.0
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def big_latency(tmp_path: Path) -> Path:
    """latency.json with 8,000 distinct latencies and a long title: each output is far past a pipe's size."""
    document: dict[str, Any] = json.loads((DATA / "latency.json").read_text())
    document["histogram"]["counts"] = [[100 + i, 1] for i in range(8000)]
    document["summary"]["count"] = 8000
    document["title"] = "a long title " * 1000
    path = tmp_path / "big.json"
    path.write_text(json.dumps(document))
    return path


def start(args: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    """The command with stdout on the O_NONBLOCK write end of a one-page pipe; returns it and the read end."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, F_SETPIPE_SZ, os.sysconf("SC_PAGE_SIZE"))
    os.set_blocking(write_end, False)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "accept_order", *args],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            env={**os.environ, "COLUMNS": "120"},
        )
    finally:
        os.close(write_end)
    return process, read_end


def read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], deadline - time.monotonic())[0]:
            break
        chunk = os.read(fd, 1024)  # less than the writer offers: it finds the pipe full again and again
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
    raise AssertionError("stdout did not end in time")


def wait_full(fd: int, size: int) -> None:
    """Until the pipe holds `size` bytes (the writer has met a full pipe), or the timeout."""
    deadline = time.monotonic() + TIMEOUT_S
    held = bytearray(4)
    while time.monotonic() < deadline:
        fcntl.ioctl(fd, termios.FIONREAD, held)
        if int.from_bytes(held, sys.byteorder) >= size:
            return
        select.select([], [], [], 0.01)  # a poll of the pipe's fill; the event is the writer filling it
    raise AssertionError("the pipe never filled")


@pytest.mark.parametrize("fmt", ["csv", "json", "text"])
def test_a_non_blocking_stdout_gets_the_whole_output(fmt: str, tmp_path: Path) -> None:
    path = big_latency(tmp_path)
    expected = subprocess.run(
        [sys.executable, "-m", "accept_order", "show", str(path), "--format", fmt],
        capture_output=True,
        env={**os.environ, "COLUMNS": "120"},
        timeout=TIMEOUT_S,
        check=True,
    ).stdout
    assert len(expected) > 4 * os.sysconf("SC_PAGE_SIZE")
    process, read_end = start(["show", str(path), "--format", fmt])
    try:
        got = read_all(read_end)
        assert process.wait(TIMEOUT_S) == 0
    finally:
        os.close(read_end)
        process.kill()
        process.wait(TIMEOUT_S)
    assert process.stderr is not None
    assert process.stderr.read() == b""
    assert len(got) == len(expected) and got == expected


def test_a_reader_gone_while_the_pipe_is_full_ends_with_141(tmp_path: Path) -> None:
    process, read_end = start(["show", str(big_latency(tmp_path)), "--format", "json"])
    try:
        wait_full(read_end, os.sysconf("SC_PAGE_SIZE"))
        os.close(read_end)
        read_end = -1
        assert process.wait(TIMEOUT_S) == 141
    finally:
        if read_end >= 0:
            os.close(read_end)
        process.kill()
        process.wait(TIMEOUT_S)
    assert process.stderr is not None
    assert process.stderr.read() == b""
