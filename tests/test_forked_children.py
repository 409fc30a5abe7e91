"""core/forked.py: the worker pool's children without multiprocessing (issue 30: its modules, with tempfile and
subprocess, cost ~6 ms of a run's start-up). What the pool relies on, as multiprocessing's fork start gave it: a
child's exit code (its status, -N for signal N), a sentinel readable the moment it is gone however it died, a
message of any length read whole or not at all, memory both sides see, and no multiprocessing in a run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from accept_order.core import forked

WAIT_S = 30.0  # a bound for what the kernel does at once (a busy machine may take long to schedule the child)


def _exit_with(code: object) -> None:
    raise SystemExit(code)


def _fail() -> None:
    raise RuntimeError("worker broke")


def _sleep_forever() -> None:
    signal.pause()


def _send(conn: forked.Connection, message: object) -> None:
    conn.send(message)


def _write(state: memoryview, value: int) -> None:
    state[2] = value


def started(target: object, *args: object) -> forked.ForkedProcess:
    child = forked.ForkedProcess(target, args, "test-child")  # type: ignore[arg-type]
    child.start()
    return child


def test_a_childs_exit_code_is_multiprocessings(capfd: pytest.CaptureFixture[str]) -> None:
    for code, expected in ((None, 0), (3, 3), ("a reason", 1)):
        child = started(_exit_with, code)
        child.join(WAIT_S)
        assert child.exitcode == expected and not child.is_alive()
    child = started(_fail)
    child.join(WAIT_S)
    assert child.exitcode == 1
    err = capfd.readouterr().err
    assert "a reason" in err and "Process test-child:" in err and "RuntimeError: worker broke" in err


def test_a_killed_child_is_seen_at_once_by_its_sentinel_and_reads_minus_the_signal() -> None:
    child = started(_sleep_forever)
    try:
        assert forked.wait([child.sentinel], 0.0) == [] and child.is_alive()
        assert child in forked.active_children()
        child.kill()
        assert forked.wait([child.sentinel], WAIT_S) == [child.sentinel]  # readable without being reaped first
        child.join(WAIT_S)
        assert child.exitcode == -signal.SIGKILL
        assert child not in forked.active_children()
        assert forked.wait([child.sentinel], 0.0) == [child.sentinel]  # still readable once reaped: wait() ends
        child.terminate()  # a reaped child is never signalled (its pid may be another process's now)
    finally:
        child.kill()
        child.join(WAIT_S)


def test_a_long_message_arrives_whole_and_a_closed_pipe_reads_eof() -> None:
    stamps = list(range(1_000_000))  # a worker's accept stamps at most: several MiB, many pipe buffers
    receiver, sender = forked.pipe()
    child = started(_send, sender, ("counters", {"index": 0, "stamps": stamps}))
    sender.close()
    try:
        assert receiver.poll(WAIT_S)
        assert receiver.recv() == ("counters", {"index": 0, "stamps": stamps})
        child.join(WAIT_S)
        assert child.exitcode == 0
        assert receiver.poll(WAIT_S)  # the child's end is closed: readable, and reads end of file
        with pytest.raises(EOFError):
            receiver.recv()
    finally:
        receiver.close()
        child.kill()
        child.join(WAIT_S)


def test_a_message_cut_short_is_an_error_not_a_message() -> None:
    receiver, sender = forked.pipe()
    os.write(sender.fileno(), forked._HEADER.pack(100) + b"only part")
    sender.close()
    with pytest.raises(OSError, match="end of file during message"):
        receiver.recv()
    receiver.close()


def test_shared_integers_are_seen_by_both_sides() -> None:
    state = forked.shared_int64s(7)
    assert len(state) == 7 and list(state) == [0] * 7
    state[6] = -1
    child = started(_write, state, 2**40)
    child.join(WAIT_S)
    assert child.exitcode == 0 and state[2] == 2**40 and state[6] == -1


SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "accept-order-python"
PROBE = """
import atexit, runpy, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
sys.argv = ["accept-order", *sys.argv[2:]]
runpy.run_path(SCRIPT, run_name="__main__")
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the built-in workers' modes are Linux's")
def test_a_run_starts_its_workers_without_multiprocessing(tmp_path: Path) -> None:
    out = tmp_path / "modules.txt"
    argv = [sys.executable, "-c", PROBE.replace("SCRIPT", repr(str(SCRIPT))), str(out), "run", "--mode", "epoll"]
    done = subprocess.run([*argv, "-n", "2"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    modules = set(out.read_text().split())
    assert "accept_order.servers.pool" in modules and "served 2" in done.stdout  # it started workers and drove them
    unwanted = ("multiprocessing", "subprocess", "tempfile")
    assert sorted(m for m in modules if m.split(".")[0] in unwanted) == []


def test_what_the_parent_buffered_is_written_once() -> None:
    """Its stdout on a pipe is buffered: a child forked with the buffer full would write it again as it ends."""
    code = (
        "from accept_order.core.forked import ForkedProcess\n"
        "print('before the fork')\n"
        "child = ForkedProcess(print, ('from the child',))\n"
        "child.start()\n"
        "child.join(30)\n"
        "print('after', child.exitcode)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "before the fork\nfrom the child\nafter 0\n"
