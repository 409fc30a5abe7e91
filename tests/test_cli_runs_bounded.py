"""A command the tests run in their own process (cli_runs.run_cli, ran_in_process) is bounded in time, as the
subprocess.run it replaced was (its timeout, 60-180 s): one that does not end fails its test and is torn down, where
before it held its xdist worker, and so the whole suite, for ever. The bound leaves the process as it found it."""

from __future__ import annotations

import signal
import socket
import threading

import pytest
from cli_runs import ran_in_process

# How long the test lets the command run unbounded before it ends it itself: were ran_in_process not bounded, the
# listener closed by then resets the waiting connection, the command fails 'served nothing' and returns, and the
# test fails (no AssertionError) rather than waiting the connection's hour
WATCHDOG_S = 60.0
HANDLERS = (signal.SIGALRM, signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def test_a_command_that_never_ends_fails_its_test_and_leaves_the_process_as_it_was() -> None:
    """'run --target' at a listener that never accepts, its one connection waiting an hour for an answer: the kernel
    completes the handshake into the listener's queue and no byte ever comes, so the command cannot end within the
    1 s bound. It is failed by its bound, and ended: no child left (no_child_outlives_the_test), no alarm still
    set, this process's handlers as before."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    watchdog = threading.Timer(WATCHDOG_S, listener.close)
    handlers = {sig: signal.getsignal(sig) for sig in HANDLERS}
    watchdog.start()
    try:
        with pytest.raises(AssertionError, match=r"run --target 127\.0\.0\.1:\d+ .*did not end within 1 s"):
            ran_in_process("run", "--target", f"127.0.0.1:{port}", "-n", "1", "--timeout", "1h", timeout_s=1)
    finally:
        watchdog.cancel()
        listener.close()
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert {sig: signal.getsignal(sig) for sig in HANDLERS} == handlers


def test_a_command_that_ends_leaves_no_alarm_behind() -> None:
    handlers = {sig: signal.getsignal(sig) for sig in HANDLERS}
    ran = ran_in_process("modes", timeout_s=1000)
    assert ran.returncode == 0 and "--server" in ran.stdout, ran
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # a late SIGALRM would end this process (SIG_DFL)
    assert {sig: signal.getsignal(sig) for sig in HANDLERS} == handlers
