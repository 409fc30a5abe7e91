"""Ctrl-C, SIGTERM and SIGHUP: how a run is stopped, and how teardown is kept from being stopped halfway.

One latch handles the three signals. The first SIGINT, SIGTERM or SIGHUP is raised (SIGTERM as
`Terminated`, SIGHUP as `HungUp`, both KeyboardInterrupts), so every `with` block and `finally` tears its
processes down on the way out; it alone decides the exit status. A hang-up (a closed terminal, a dropped ssh
session) ends a run as SIGTERM does, keeping the partial result: a measurement is not meant to outlive its
terminal (run it under nohup or setsid for that, which this latch leaves alone: an ignored SIGHUP stays
ignored). Every later signal is only recorded: nothing after the first can cut a teardown,
a partial result or the error line short. Inside `deferred()` (teardown) even the first signal is held and
raised when the block ends. The command line (cli.main) installs the latch before any heavy import and
holds signals everywhere except inside a command's body (`interruptible()`, in handle_errors).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from . import startup
from .signal_order import SIGNALS, one_handler_at_a_time

# A signal of the same kind this soon after the one before is that one delivered again, not a second Ctrl-C:
# `timeout -s INT` (without --foreground) signals the tool and then its whole process group, the tool
# included, microseconds apart; a closed terminal hangs a shell's job up twice (the shell's SIGHUP to its jobs,
# then the kernel's to the foreground group as the shell exits). Timed when the handler runs, which can be well
# after delivery on a busy machine (a first Ctrl-C handled 60 ms late took one 100 ms later for its echo in 2 of
# 3 runs here), so a SIGINT or SIGTERM is taken for an echo only where one can come (`_group_echoes`).
ECHO_S = 0.05


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every owner of child processes ends them on the way out."""


class HungUp(KeyboardInterrupt):
    """SIGHUP (the terminal went away), raised like SIGTERM; its own type so that the exit status is 129."""


def interrupt_for(signum: int | None) -> KeyboardInterrupt:
    """The exception a latched signal is raised as."""
    if signum == signal.SIGTERM:
        return Terminated()
    if signum == signal.SIGHUP:
        return HungUp()
    return KeyboardInterrupt()


def signal_of(exc: BaseException) -> int:
    """The signal an interrupt stands for (an exception that carries another as its `cause` is that one's)."""
    cause = getattr(exc, "cause", exc)
    if isinstance(cause, Terminated):
        return signal.SIGTERM
    if isinstance(cause, HungUp):
        return signal.SIGHUP
    return signal.SIGINT


class _Latch:
    first: int | None = None  # the first SIGINT/SIGTERM/SIGHUP received: it decides how the run ends
    raised = False  # it has been raised as an exception
    held = 0  # > 0: the first signal is recorded, raised only when the hold ends
    received = 0  # every signal the latch saw, first and later ones (echoes not): a later one says "stop now"
    last: tuple[int, float] | None = None  # the last signal counted, and when its handler ran (monotonic)
    kept = 0  # holds `keep()` took for a finished result on its way to its file (part of `held`)


_latch = _Latch()


def _raise_first() -> None:
    _latch.raised = True
    raise interrupt_for(_latch.first)


def _group_echoes() -> bool:
    """Whether a SIGINT or SIGTERM can reach this process twice: only from a sender that signals it and then
    its process group, which the process does not lead (timeout(1) leads the group it runs the command in).
    A shell's job leads its own group, and a terminal's Ctrl-C reaches each process of it once: a second one
    soon after is a person's, however late the first one's handler ran."""
    return os.getpgrp() != os.getpid()


def _echo(signum: int, now: float) -> bool:
    """The same signal as the last one, delivered again (ECHO_S): not counted as another."""
    if _latch.last is None or _latch.last[0] != signum or now - _latch.last[1] >= ECHO_S:
        return False
    return signum == signal.SIGHUP or _group_echoes()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    now = time.monotonic()
    if _echo(signum, now):
        return  # the first one's own second delivery: it has been handled as that one
    _latch.received += 1
    _latch.last = (signum, now)
    if _latch.first is None:
        _latch.first = signum
    elif _latch.raised:
        return  # a second signal: the first one decides; it must not interrupt the way out
    if not _latch.held:
        _raise_first()


def _unraisable(info: sys.UnraisableHookArgs) -> None:
    """The first signal raised inside a finalizer (a __del__ during garbage collection) is swallowed by
    Python ("Exception ignored in ..."): no such line, and the signal is posted again, to be raised in
    ordinary code. Anything else goes to the previous hook."""
    if isinstance(info.exc_value, KeyboardInterrupt) and _latch.raised and _latch.first is not None:
        _latch.raised = False
        signal.raise_signal(_latch.first)
        return
    _previous_unraisable(info)


_previous_unraisable = sys.unraisablehook


def pending() -> int | None:
    """The signal that arrived while held and has not been raised yet, if any."""
    return _latch.first if _latch.first is not None and not _latch.raised else None


def received() -> int:
    """How many signals the latch has seen (a count that went up during a block: one arrived in it)."""
    return _latch.received


def latest() -> int | None:
    """The last signal the latch counted (its echoes not), if any: the one a count that went up stands for."""
    return None if _latch.last is None else _latch.last[0]


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _installed() -> bool:
    return signal.getsignal(signal.SIGINT) is _on_signal


def _latched() -> tuple[int, ...]:
    """The signals to latch: all three, but not a SIGHUP this process was started ignoring (nohup, or a
    shell's `trap '' HUP`): whoever started it asked for the run to outlive the terminal."""
    if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        return tuple(s for s in SIGNALS if s != signal.SIGHUP)
    return SIGNALS


def install() -> None:
    """For the process's whole life (cli.main): the latch on SIGINT, SIGTERM and SIGHUP, holding signals
    until a command's body runs. A SIGINT that came while the package was imported (core/startup.py) is
    taken over as if it came now."""
    _latch.first, _latch.raised, _latch.held, _latch.kept = startup.taken(), False, 1, 0
    _latch.received = int(_latch.first is not None)
    # one taken during the imports is taken as if it came now: its echo (group delivery) may follow
    _latch.last = None if _latch.first is None else (_latch.first, time.monotonic())
    for sig in _latched():
        signal.signal(sig, _on_signal)
    sys.unraisablehook = _unraisable


def ignore() -> None:
    """At the very end of the command line: the exit status is decided and no child is left, so later
    signals are ignored (SIG_IGN survives interpreter shutdown, which resets Python handlers to SIG_DFL)."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


@contextmanager
def _own_latch(held: int) -> Iterator[None]:
    """Outside the command line (API, in-process tests): the latch for the block only, then as before."""
    previous = {sig: signal.signal(sig, _on_signal) for sig in _latched()}
    _latch.first, _latch.raised, _latch.held, _latch.received, _latch.kept = None, False, held, 0, 0
    _latch.last = None
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        first, raised = _latch.first, _latch.raised
        _latch.first, _latch.raised, _latch.held, _latch.kept = None, False, 0, 0
        if first is not None and not raised and sys.exc_info()[0] is None:
            raise interrupt_for(first)


@contextmanager
def interruptible() -> Iterator[None]:
    """A command's body: the first signal is raised where it lands (at once if it came while held)."""
    if not _main_thread():
        yield
        return
    if not _installed():
        with _own_latch(held=0):
            yield
        return
    _latch.held -= 1
    try:
        if pending() is not None and not _latch.held:
            _raise_first()
        yield
        release()  # a result kept past its block and never saved: its signal still ends the command
    finally:
        _latch.held += 1 - _latch.kept  # an exception on its way out stands; a pending signal stays unraised
        _latch.kept = 0


def keep() -> None:
    """From now until `release()`, hold SIGINT, SIGTERM and SIGHUP: a finished result is on its way to its
    file (from the end of its lifecycle, through the progress bars' teardown and the other variants' lists,
    to the command's save). The next load releases it (a signal then stops that load, and the results so far
    are kept), as do the save and the end of the command's body. Outside the command line it does nothing:
    an API caller gets the result, or RunInterrupted with it, from the lifecycle itself."""
    if _main_thread() and _installed():
        _latch.held += 1
        _latch.kept += 1


def release() -> None:
    """End what `keep()` held; a signal that arrived meanwhile is raised now, unless an exception is already
    on its way out or another hold is still on."""
    if not _latch.kept:
        return
    _latch.held -= _latch.kept
    _latch.kept = 0
    if not _latch.held and pending() is not None and sys.exc_info()[0] is None:
        _raise_first()


@contextmanager
def deferred() -> Iterator[None]:
    """Run a block that must finish (ending children) with SIGINT, SIGTERM and SIGHUP held back.

    A first signal that arrives inside is raised when the block ends, unless an exception (usually the
    first Ctrl-C) is already on its way out, in which case that one stands; a signal after the first is
    never raised.
    """
    if not _main_thread():
        yield
        return
    if not _installed():
        with _own_latch(held=1):
            yield
        return
    _latch.held += 1
    try:
        yield
    finally:
        _latch.held -= 1
        if not _latch.held and pending() is not None and sys.exc_info()[0] is None:
            _raise_first()


class Holding:
    """`holding()`'s handle: the signal that arrived inside the block, taken as the exception it stands for."""

    def __init__(self) -> None:
        self._taken: KeyboardInterrupt | None = None

    def taken(self) -> KeyboardInterrupt | None:
        return self._taken


@contextmanager
def holding() -> Iterator[Holding]:
    """Run a block whose work must not be lost (a finished measurement being stopped and built into a
    result) with SIGINT, SIGTERM and SIGHUP held back, and, unlike `deferred()`, not raised when it ends:
    a first signal that arrived inside is taken (`Holding.taken()`, as the exception it stands for, marked
    raised so that later ones are only recorded) for the caller to end the command with once what was
    measured is safe. An exception on its way out of the block leaves the signal pending, as `deferred()`."""
    hold = Holding()
    if not _main_thread():
        yield hold
        return
    if not _installed():
        with _own_latch(held=1):
            yield hold
            hold._taken = _take()
        return
    _latch.held += 1
    try:
        yield hold
    finally:
        _latch.held -= 1
    hold._taken = _take()


def _take() -> KeyboardInterrupt | None:
    if pending() is None:
        return None
    _latch.raised = True
    return interrupt_for(_latch.first)


class ArrivalOrder:
    """Which of SIGINT, SIGTERM and SIGHUP arrived first, as the kernel delivered them.

    CPython runs the Python handlers of signals that came together in signal-number order, and the second
    handler's exception can replace the first one's while it unwinds; the exception type then names the wrong
    signal. The C-level handler writes each signal number to the wakeup fd as it runs, so the first byte there
    is the order, once each handler runs whole before the next and only the main thread takes them
    (core/signal_order.py, which says what is left: two pending at once are read lowest number first).
    """

    def __enter__(self) -> ArrivalOrder:
        self._fds: tuple[int, int] | None = None
        self._previous = -1
        if _main_thread():
            one_handler_at_a_time()
            try:
                read, write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
                self._previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
                self._fds = (read, write)
            except (OSError, ValueError, AttributeError):
                self._fds = None
        return self

    def first(self) -> int | None:
        """SIGINT, SIGTERM or SIGHUP, whichever arrived first since __enter__; None if none was seen."""
        if self._fds is None:
            return None
        try:
            data = os.read(self._fds[0], 4096)
        except OSError:
            return None
        return next((b for b in data if b in SIGNALS), None)

    def __exit__(self, *exc: object) -> None:
        if self._fds is not None:
            signal.set_wakeup_fd(self._previous)
            for fd in self._fds:
                os.close(fd)
