"""A progress bar on a narrow terminal says its figures whole: at 40 columns 'accept-order run --mode epoll -n 20000'
drew 'epoll: conne… ━  193/200… 193 served, 0 fai… 0:00:…', every figure cut with "…". rich narrows the bar to
what is left; the figures now go to a line of their own, or say less (the failures alone beside the count), and
the label and what a full bar waits for wrap onto lines of their own where even that does not fit
(cli/bars.py fitted_progress, bar_layouts)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from collections.abc import Iterator
from unittest import mock

import pytest
from rich.console import Console
from test_progress_terminal import LINUX_ONLY, _read_until

from accept_order.cli import output
from accept_order.core.finished import Finished

ELLIPSIS = "…"
ANSI = re.compile(r"\x1b\[[?0-9;]*[A-Za-z]")
LONG_LABEL = "run 2 of 4: epoll: 100000 connections, about 6 s left"


def drawn(width: int, label: str, total: int, done: Finished, timeout_s: float | None = None) -> list[str]:
    """The lines of the bar as drawn once at `done` on a console `width` wide (the bar's own, as on a terminal)."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=True, color_system=None)
    with mock.patch.object(output, "_bar_console", lambda: console):
        with output.progress_bar(label, total, timeout_s=timeout_s) as update:
            update(done)
            bar = output._BARS[-1]
            lines = Console(file=io.StringIO(), width=width).render_lines(bar.make_tasks_table(bar.tasks))
    return ["".join(segment.text for segment in line).rstrip() for line in lines]


@pytest.fixture(autouse=True)
def _no_bar_left() -> Iterator[None]:
    yield
    assert not output._BARS


@pytest.mark.parametrize(
    ("label", "done", "figures"),
    [
        ("epoll: connections", Finished(193, 193), ("193/20000", "0 failed")),
        ("epoll: connections", Finished(20000, 0, 20000), ("20000/20000", "20,000 timed out")),
        ("epoll: connections", Finished(2950, 10, 2000), ("2950/20000", "2,940 failed")),
        (LONG_LABEL, Finished(5000, 5000), ("5000/20000", "0 failed")),
        (LONG_LABEL, Finished(20000, 0, 20000), ("20000/20000", "20,000 timed out")),  # its wait said too
    ],
)
def test_every_figure_is_whole_at_40_columns(label: str, done: Finished, figures: tuple[str, ...]) -> None:
    lines = drawn(36, label, 20000, done, timeout_s=5.0)  # a 40-column terminal: the bar leaves room for an echo
    text = "\n".join(lines)
    assert ELLIPSIS not in text, text
    assert all(len(line) <= 36 for line in lines), text
    for figure in figures:
        assert figure in text, text
    assert " ".join(text.split()).count(" ".join(label.split())) == 1, text  # the label whole, wrapped or not
    if int(done) == 20000:  # the load done: what the bar waits for, in its place
        assert "load done, stopping" in text, text


def test_a_wide_terminal_keeps_one_line_with_the_whole_split() -> None:
    lines = drawn(116, "epoll: connections", 20000, Finished(2950, 10, 2000))
    assert len(lines) == 1, lines
    assert "2950/20000 10 served, 2,940 failed (2,000 timed out)" in lines[0], lines


@LINUX_ONLY
def test_runs_bar_fits_a_40_column_terminal() -> None:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 40, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "TERM")}
    argv = [sys.executable, "-m", "accept_order", "run", "--mode", "epoll", "-n", "20000"]
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": "xterm-256color"})
    os.close(slave)
    seen = bytearray()
    try:
        _read_until(master, seen, 120)  # until the terminal closes
        assert proc.wait(30) == 0, bytes(seen)[-800:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    text = seen.decode("utf-8", "replace")
    shown = "\x1b[?25h"  # rich shows the cursor again as the bar goes: the report follows
    assert shown in text, text[-800:]
    frames = ANSI.sub("", text[: text.index(shown)])
    assert re.search(r"[1-9]\d*/20000", frames), frames[-800:]  # it moved, and said how far
    assert re.search(r"\d+ failed", frames), frames[-800:]
    assert ELLIPSIS not in frames, frames[-800:]
    assert all(len(line) <= 40 for line in re.split(r"[\r\n]", frames)), frames[-800:]


def test_a_long_label_is_not_cut_to_keep_one_line_at_80_columns() -> None:
    # latency --modes's second run at 80 columns (76 cells) drew 'run 2 of 2, about 4 s left: re… ━  1121/20000
    # 1,121 served, 0 failed 0:00:00': the mode cut from its label, the bar one cell, to keep the figures beside them
    label = "run 2 of 2, about 4 s left: reuseport: connections"
    lines = drawn(76, label, 20000, Finished(1121, 1121))
    text = "\n".join(lines)
    assert ELLIPSIS not in text, text
    assert lines[0].startswith(f"{label} ━"), text  # the label whole, the bar beside it
    assert "1121/20000 1,121 served, 0 failed" in text, text  # and every figure, on a line of their own
    assert len(lines) == 2, text
