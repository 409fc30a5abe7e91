"""A stdout left non-blocking by whoever made it (a pipe from an event loop) gets the whole output, and a
reader that goes away ends the command with 141 (issue 27 §1). Python's text stream writes what the pipe
takes at once and drops the rest without an error; cli/whole.py waits for the pipe instead, for stdout and
stderr alike: reports, notes, error lines and click's own output (--help, --version, usage errors).

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
from conftest import run_cli

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
    # what the command writes where nothing is short: in this process (an in-memory stdout takes every byte at
    # once); a process of its own for it was a second interpreter's start-up per format
    reference = run_cli(["show", str(path), "--format", fmt], columns=120)
    assert reference.exit_code == 0, reference.output
    expected = reference.stdout_bytes
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


# stderr and click's own output (issue 27 §1, the review of e698dd5): a note, an error line, a usage error,
# --help and --version, each to a pipe that is already full when the command starts. The test drains it only
# once the command has met the full pipe: it has ended (the line lost: the old behaviour) or it sleeps in
# poll (cli/whole.py, waiting for room). A reader that goes away meanwhile: 141 on stdout; on stderr the
# line cannot be said, and the command's status stands.


def full_pipe() -> tuple[int, int, bytes]:
    """A one-page pipe, its write end O_NONBLOCK, filled until it takes no more: (read end, write end, fill)."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, F_SETPIPE_SZ, os.sysconf("SC_PAGE_SIZE"))
    os.set_blocking(write_end, False)
    filled = 0
    try:
        while True:
            filled += os.write(write_end, b"#" * 512)
    except BlockingIOError:
        pass
    return read_end, write_end, b"#" * filled


def start_on_full(args: list[str], fd: int) -> tuple[subprocess.Popen[bytes], int, bytes]:
    """The command with its descriptor `fd` (1 or 2) on a full pipe, the other one on a plain pipe."""
    read_end, write_end, filled = full_pipe()
    streams = (
        {"stdout": write_end, "stderr": subprocess.PIPE}
        if fd == 1
        else {"stdout": subprocess.PIPE, "stderr": write_end}
    )
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "accept_order", *args],
            stdin=subprocess.DEVNULL,
            env={**os.environ, "COLUMNS": "120"},
            **streams,  # type: ignore[call-overload]
        )
    finally:
        os.close(write_end)
    return process, read_end, filled


def sleeps_in_poll(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except (OSError, IndexError):
        return False
    return state == "S" and "poll" in wchan


@pytest.fixture(scope="module")
def wchan_names_poll() -> None:
    """This kernel says where a sleeping process waits (/proc/PID/wchan), as the tests below need."""
    process = subprocess.Popen([sys.executable, "-c", "import select; select.poll().poll()"])
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while not sleeps_in_poll(process.pid):
            if time.monotonic() > deadline:
                pytest.skip("/proc/PID/wchan does not name poll here: cannot tell when the command waits")
            select.select([], [], [], 0.01)
    finally:
        process.kill()
        process.wait(TIMEOUT_S)


def wait_met_full(process: subprocess.Popen[bytes], ready: Any = lambda: True) -> None:
    """Until the command has ended or sleeps in poll (and `ready()`: past any other wait of its own)."""
    deadline = time.monotonic() + TIMEOUT_S
    while process.poll() is None and not (sleeps_in_poll(process.pid) and ready()):
        if time.monotonic() > deadline:
            raise AssertionError("the command neither ended nor waited for the pipe")
        select.select([], [], [], 0.01)  # a look at its state; the event is the command meeting the full pipe


def plain(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "accept_order", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env={**os.environ, "COLUMNS": "120"},
        timeout=TIMEOUT_S,
        check=False,
    )


CLICK_AND_ERRORS = [
    pytest.param(["--help"], 1, 0, id="help"),
    pytest.param(["run", "--help"], 1, 0, id="run-help"),
    pytest.param(["--version"], 1, 0, id="version"),
    pytest.param(["show", "/nonexistent.json"], 2, 1, id="error"),
    pytest.param(["run", "--mode", "epol"], 2, 2, id="usage-error"),
]


@pytest.mark.usefixtures("wchan_names_poll")
@pytest.mark.parametrize(("args", "fd", "status"), CLICK_AND_ERRORS)
def test_a_full_non_blocking_pipe_gets_clicks_output_and_the_error_line(args: list[str], fd: int, status: int) -> None:
    expected = plain(args)
    assert expected.returncode == status
    said = expected.stdout if fd == 1 else expected.stderr
    assert said and not (expected.stderr if fd == 1 else expected.stdout)
    process, read_end, filled = start_on_full(args, fd)
    try:
        wait_met_full(process)
        got = read_all(read_end)
        out, err = process.communicate(timeout=TIMEOUT_S)
        other = err if fd == 1 else out
    finally:
        os.close(read_end)
        process.kill()
        process.wait(TIMEOUT_S)
    assert (process.returncode, other) == (status, b"")
    assert got == filled + said


@pytest.mark.usefixtures("wchan_names_poll")
def test_a_full_non_blocking_stderr_gets_the_note_after_the_run(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    process, read_end, filled = start_on_full(["run", "-w", "2", "-n", "3", "--json", str(saved)], 2)
    try:
        wait_met_full(process, saved.exists)  # the run (its own waits) is over once the file is there
        got = read_all(read_end)
        report, _ = process.communicate(timeout=TIMEOUT_S)
    finally:
        os.close(read_end)
        process.kill()
        process.wait(TIMEOUT_S)
    assert process.returncode == 0
    assert got == filled + f"wrote {saved}\n".encode()
    assert b"affinity:" in report and json.loads(saved.read_text())["kind"] == "run"


@pytest.mark.usefixtures("wchan_names_poll")
def test_help_whose_reader_goes_away_while_the_pipe_is_full_ends_with_141() -> None:
    process, read_end, _ = start_on_full(["run", "--help"], 1)
    try:
        wait_met_full(process)
        os.close(read_end)
        read_end = -1
        _, err = process.communicate(timeout=TIMEOUT_S)
    finally:
        if read_end >= 0:
            os.close(read_end)
        process.kill()
        process.wait(TIMEOUT_S)
    assert (process.returncode, err) == (141, b"")


@pytest.mark.usefixtures("wchan_names_poll")
@pytest.mark.parametrize("saving", [False, True], ids=["error", "note"])
def test_a_stderr_whose_reader_goes_away_leaves_the_status_as_it_was(saving: bool, tmp_path: Path) -> None:
    """The error line (show's, exit 1) or the note (run's "wrote", exit 0) cannot be said: the status is the
    command's, with no traceback and no 120 from Python's flush at exit."""
    saved = tmp_path / "run.json"
    args = ["run", "-w", "2", "-n", "3", "--json", str(saved)] if saving else ["show", "/nonexistent.json"]
    process, read_end, _ = start_on_full(args, 2)
    try:
        wait_met_full(process, saved.exists if saving else lambda: True)
        os.close(read_end)
        read_end = -1
        out, _ = process.communicate(timeout=TIMEOUT_S)
    finally:
        if read_end >= 0:
            os.close(read_end)
        process.kill()
        process.wait(TIMEOUT_S)
    assert process.returncode == (0 if saving else 1)
    assert (b"affinity:" in out) if saving else out == b""


@pytest.mark.parametrize("saving", [False, True], ids=["error", "note"])
def test_a_stderr_without_a_reader_leaves_the_status_as_it_was(saving: bool, tmp_path: Path) -> None:
    """The same with no reader from the start (rich alone ends a broken pipe with 1, Python's flush at exit
    with 120)."""
    saved = tmp_path / "run.json"
    args = ["run", "-w", "2", "-n", "3", "--json", str(saved)] if saving else ["show", "/nonexistent.json"]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "accept_order", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=write_end,
            timeout=TIMEOUT_S,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == (0 if saving else 1)
    assert (b"affinity:" in done.stdout and saved.exists()) if saving else done.stdout == b""
