"""What review found in the progress's served/failed split (34eb880): the drivers published their timed-out count a
tick behind the finished one, so at a listener that answers nothing the heartbeat read 'N failed (N-4 timed out)'
in 5 of 11 beats (epoll) and 10 of 11 (io_uring's chains) where every connection had timed out; a burst or ramp
whose connections are kept counted requests and called them connections ('9,503 of 200 connections'); and a
Finished could not be pickled or copied. The listener here accepts nothing: the kernel guarantees no byte comes,
so every connection that finishes has timed out."""

from __future__ import annotations

import copy
import fcntl
import os
import pickle
import pty
import re
import struct
import subprocess
import sys
import termios
from typing import Any

import pytest
from conftest import run_cli
from test_progress_failures import ESCAPES, _quick_beats
from test_progress_terminal import _read_until
from test_uring_loop import LINE, URING, AnyReply, Flag, bounded

from accept_order.cli import burst, ramp
from accept_order.core.finished import FINISHED_AT, PUBLISHED, SERVED_AT, TIMED_OUT_AT, Finished
from accept_order.loads.drive_loop import DriverConfig, _drive
from accept_order.loads.uring_loop import drive_uring, drive_uring_api

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and io_uring")


class Watched(list[int]):
    """A driver's progress slots that check, at each write, what a reader would see: every failure here is a
    timeout, so the timed-out count published is never below the failures published."""

    def __init__(self) -> None:
        super().__init__([0] * PUBLISHED)
        self.behind: list[tuple[int, int, int]] = []

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        done, served, timed_out = self[FINISHED_AT], self[SERVED_AT], self[TIMED_OUT_AT]
        if timed_out < done - served:
            self.behind.append((done, served, timed_out))


def test_a_finished_count_pickles_and_copies_with_its_split() -> None:
    finished = Finished(2950, 10, 2900)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        again = pickle.loads(pickle.dumps(finished, protocol))
        assert (type(again), int(again), again.served, again.timed_out) == (Finished, 2950, 10, 2900)
    for copied in (copy.copy(finished), copy.deepcopy(finished)):
        assert (int(copied), copied.served, copied.timed_out) == (2950, 10, 2900)


@LINUX_ONLY
@pytest.mark.parametrize(
    "loop", ["epoll", pytest.param("io_uring chains", marks=URING), pytest.param("io_uring api", marks=URING)]
)
def test_the_timed_out_count_is_published_with_the_failures(silent_port: int, loop: str) -> None:
    cfg = DriverConfig(0, ("127.0.0.1", silent_port), AnyReply(), LINE, 6, None, 3, 0.3, loop=loop.split()[0])
    progress = Watched()
    if loop == "epoll":
        result = bounded(lambda: _drive(cfg, progress, Flag()), True)
    elif loop == "io_uring chains":
        result = bounded(lambda: drive_uring(cfg, progress, Flag(), 0.02), True)
    else:
        result = bounded(lambda: drive_uring_api(cfg, progress, Flag(), 0.02), True)
    assert dict(result["errors"]) == {"timeout": 6}, result["errors"]  # the listener's guarantee, as measured
    assert progress.behind == [], progress.behind[:5]  # (finished, served, timed out) a reader could have seen
    assert list(progress) == [6, 0, 6]


@LINUX_ONLY
def test_a_bursts_kept_connections_beat_their_requests(monkeypatch: pytest.MonkeyPatch, silent_port: int) -> None:
    # 4 clients × 5 requests: the load counts 20 requests; the beat said '12 of 4 connections'
    beats = _quick_beats(monkeypatch, burst)
    args = ["burst", "--target", f"127.0.0.1:{silent_port}", "--clients", "4", "--requests-per-connection", "5"]
    result = run_cli([*args, "--timeout", "500ms"])
    assert result.exit_code == 1, result.output  # a silent port served nothing: the report, then why
    said = [b for b in beats if re.search(r" [1-9][\d,]* failed", b)]  # once one timed out (a beat may come first)
    assert said, beats
    assert all(re.match(r"accept-order: \d+ of 20 requests: 0 served, \d+ failed \(timeout\), ", b) for b in said)


@LINUX_ONLY
def test_a_ramps_kept_connections_beat_their_requests(monkeypatch: pytest.MonkeyPatch, silent_port: int) -> None:
    beats = _quick_beats(monkeypatch, ramp)
    args = ["ramp", "--target", f"127.0.0.1:{silent_port}", "--rates", "10", "--in-flight", "4"]
    result = run_cli([*args, "--requests-per-connection", "5", "--step", "2s", "--timeout", "500ms"])
    assert result.exit_code == 1, result.output  # a silent port served nothing: the report, then why
    said = [b for b in beats if re.search(r" [1-9][\d,]* failed", b)]  # once one timed out (a beat may come first)
    assert said, beats
    assert all(re.match(r"accept-order: [\d,]+ requests: 0 served, [\d,]+ failed \(timeout\), ", b) for b in said)


@LINUX_ONLY
def test_a_ramps_bar_counts_its_kept_connections_requests(silent_port: int) -> None:
    # the bar of a step (a duration) said '14 connections' of what were 14 requests over 4 kept connections
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "TERM")}
    argv = [sys.executable, "-m", "accept_order", "ramp", "--target", f"127.0.0.1:{silent_port}", "--rates", "10"]
    argv += ["--in-flight", "4", "--requests-per-connection", "5", "--step", "2s", "--timeout", "500ms"]
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": "xterm-256color"})
    os.close(slave)
    seen = bytearray()
    try:
        # its count once a request has timed out, then how they ended
        counted = rb"[1-9]\d* (connections|requests)" + ESCAPES + rb"0 served, [1-9]\d* failed"
        found = _read_until(master, seen, 120, counted)
        _read_until(master, seen, 120)  # the rest, until the terminal closes
        assert proc.wait(30) == 1, bytes(seen)[-800:]  # a silent port served nothing: the report, then why
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert found, bytes(seen)[-1500:]
    said = re.search(counted, seen)
    assert said is not None and said.group(1) == b"requests", bytes(seen)[-1500:]
