"""Review of ae34889 (a signal of the same kind within ECHO_S of the one before is that one delivered again).
The window is timed when the handler runs, not when the signal came: on a busy machine a first Ctrl-C handled
60 ms late took a person's second one, 100 ms after it, for its echo (2 of 3 runs of latency here), and the
report was printed where a second Ctrl-C means stop now. An echo of SIGINT or SIGTERM comes only from a sender
that signals the tool and then its process group (timeout(1), which leads that group); a shell's job leads its
own group and a terminal's Ctrl-C reaches it once, so there a second one is always counted. A hang-up can come
twice to a job (the shell's SIGHUP, then the kernel's as the shell exits): an echo wherever the tool runs."""

from __future__ import annotations

import signal

import pytest

from accept_order.core import signals


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The latch's clock, moved by the test."""
    now = [1000.0]
    monkeypatch.setattr(signals.time, "monotonic", lambda: now[0])
    return now


def _count(signums: list[int], clock: list[float], apart_s: float) -> int:
    """How many of these signals, raised `apart_s` apart on the latch's clock, the latch counts."""
    with pytest.raises(KeyboardInterrupt), signals.deferred():  # outside the CLI: its own latch, held
        for signum in signums:
            signal.raise_signal(signum)
            clock[0] += apart_s
        counted = signals.received()
    return counted


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: signal.Signals(s).name)
def test_a_group_leaders_second_signal_soon_after_is_counted(
    signum: int, clock: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(signals, "_group_echoes", lambda: False)  # a shell's job: it leads its own group
    assert _count([signum, signum], clock, signals.ECHO_S / 2) == 2


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: signal.Signals(s).name)
def test_under_timeout_the_groups_copy_is_an_echo(
    signum: int, clock: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(signals, "_group_echoes", lambda: True)  # timeout(1) leads the group
    assert _count([signum, signum], clock, signals.ECHO_S / 2) == 1
    assert _count([signum, signum], clock, signals.ECHO_S * 2) == 2  # a second one later still counts


def test_a_hang_up_twice_is_one_wherever_the_tool_runs(clock: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        pytest.skip("this test process ignores SIGHUP (nohup): the latch leaves it alone")
    monkeypatch.setattr(signals, "_group_echoes", lambda: False)
    assert _count([signal.SIGHUP, signal.SIGHUP], clock, signals.ECHO_S / 2) == 1


def test_group_echoes_reads_the_process_group(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(signals.os, "getpgrp", lambda: 1)
    monkeypatch.setattr(signals.os, "getpid", lambda: 1)
    assert signals._group_echoes() is False  # it leads its group
    monkeypatch.setattr(signals.os, "getpid", lambda: 2)
    assert signals._group_echoes() is True
