"""A progress bar on a real terminal (a pty whose line discipline echoes a typed Ctrl-C as "^C"): after the
Ctrl-C, nothing of the bar is left on the screen above the partial report. The screen is worked out from the
bytes the terminal received by a small VT model (enough for what rich writes: CR, LF, cursor up, erase line,
and the deferred wrap of a full line, which is what left the bar frozen: the echo pushed onto a new line)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import psutil
import pytest

from accept_order.cli import output

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs a pty and epoll")
CSI = re.compile(r"\x1b\[([?0-9;]*)([A-Za-z])")


def screen(data: str, columns: int) -> list[str]:
    """The lines a VT100-like terminal `columns` wide shows after `data` (no scrolling region: rows grow)."""
    rows: list[list[str]] = [[]]
    row = col = 0
    wrap_next = False  # the cursor sits past the last column: the next character starts a new line
    i = 0
    while i < len(data):
        match = CSI.match(data, i)
        if match:
            arg, command = match.groups()
            count = int(arg) if arg.isdigit() else 1
            if command == "A":
                row, wrap_next = max(row - count, 0), False
            elif command == "K":
                line = rows[row] if row < len(rows) else []
                del line[0 if arg == "2" else col :]
            i = match.end()
            continue
        char = data[i]
        i += 1
        if char == "\r":
            col, wrap_next = 0, False
        elif char == "\n":
            row, wrap_next = row + 1, False
        elif char >= " ":
            if wrap_next:
                row, col, wrap_next = row + 1, 0, False
            while len(rows) <= row:
                rows.append([])
            line = rows[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = char
            wrap_next = col == columns - 1
            col = min(col + 1, columns - 1)
        while len(rows) <= row:
            rows.append([])
    return ["".join(line).rstrip() for line in rows]


def test_the_screen_model_wraps_a_full_line_only_when_more_follows() -> None:
    assert screen("abcd\r\n\x1b[1A\x1b[2K", 4) == ["", ""]  # a full line, erased as rich erases it
    assert screen("abcd^C\r\x1b[2Kabcd\r\n\x1b[1A\x1b[2K", 4) == ["abcd", "", ""]  # the echo wrapped: frozen


def _read_until(master: int, seen: bytearray, timeout: float, pattern: bytes | None = None) -> bool:
    """Read the terminal into `seen` until `pattern` (a regex; None: until the terminal closes) is in it,
    it closes, or the deadline passes; whether the pattern was found."""
    deadline = time.monotonic() + timeout
    while pattern is None or not re.search(pattern, seen):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([master], [], [], left)[0]:
            return False
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every process holding the terminal has closed it
            break
        if not chunk:
            break
        seen += chunk
    return pattern is not None and re.search(pattern, seen) is not None


@LINUX_ONLY
def test_a_typed_ctrl_c_leaves_no_bar_above_the_partial_report() -> None:
    """80 columns, the bar's line as wide as rich makes it, Ctrl-C typed (echoed "^C", SIGINT to the group):
    the screen has the report, and no line of the bar."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))

    def controlling_terminal() -> None:  # a session of its own on the pty, in its foreground: as in a shell
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "TERM")}
    argv = [sys.executable, "-m", "accept_order", "latency", "--modes", "epoll,reuseport", "-w", "2", "-c", "8"]
    proc = subprocess.Popen(
        [*argv, "-n", "5000000"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**env, "TERM": "xterm-256color"},
        preexec_fn=controlling_terminal,
    )
    os.close(slave)
    seen = bytearray()
    try:
        assert _read_until(master, seen, 60, rb"[1-9][0-9]*/5000000"), bytes(seen)[-500:]  # the bar moves
        os.write(master, b"\x03")  # Ctrl-C, typed
        _read_until(master, seen, 60)  # everything, until the terminal closes
        assert proc.wait(30) == 130, bytes(seen)[-500:]
    finally:
        if proc.poll() is None:
            for child in psutil.Process(proc.pid).children(recursive=True):
                child.kill()
            proc.kill()
            proc.wait()
        os.close(master)
    shown = screen(seen.decode("utf-8", "replace"), 80)
    assert "^C" in seen.decode("utf-8", "replace")  # the terminal echoed it, as a shell's would
    assert any(line.startswith("Interrupted:") for line in shown), shown
    bars = [line for line in shown if "/5000000" in line or "━" in line]
    assert not bars, "\n".join(shown[:6])


def test_a_bar_is_erased_whole_when_a_signal_comes_while_it_is_erased() -> None:
    """A Ctrl-C that lands inside rich's stop (the bar marked stopped, its line not yet erased) is held until
    the line is gone, then raised."""

    class Bar:
        erased = False

        def stop(self) -> None:
            signal.raise_signal(signal.SIGINT)
            self.erased = True

    bar = Bar()
    with pytest.raises(KeyboardInterrupt):
        output._stop(bar)
    assert bar.erased
