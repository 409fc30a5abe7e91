"""Which of two signals came first (signals.ArrivalOrder, core/signal_order.py), with a busy thread of the tool
beside: a second signal sent once the kernel has handed the first over is read second, every time; one sent right
after a signal of a lower number is read second too (if both were pending at once, the kernel hands the lower
number over first). Before: 0.6-6% of rounds read the first kind wrong, 5-96% the second (a handler run on top
of the first's, or the busy thread taking the second, wrote first).

Each check runs in a forked child, where the tool's threads are the only threads (a pytest worker has threads of
its own that do not block the signals, and the kernel may hand a signal to any of them), many rounds back to back
in one process."""

from __future__ import annotations

import hashlib
import io
import os
import select
import signal
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console
from rich.progress import Progress

import accept_order
from accept_order.cli.output import _start, _stop
from accept_order.core.signal_order import main_thread_only, start_thread
from accept_order.core.signals import SIGNALS, ArrivalOrder, holding, received

ROUNDS = 500
DEADLINE_S = 20.0  # for each wait in the child: it reports a timeout instead of hanging the test


CHILD_LIMIT_S = 120  # a child's 500 rounds take 1-3 s here, busy


def in_a_child(check: Callable[[], str]) -> str:
    """`check()`'s answer, from a forked child (after a fork only the forking thread exists)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: no pytest machinery after a fork; what happened goes back through the pipe
        try:
            said = check()
        except BaseException:
            said = traceback.format_exc()
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    # A child stuck after the fork (a lock some thread held at the fork) must fail the test, not hang the suite
    # (a review's find): its answer is waited for with a deadline, then it is killed.
    deadline = time.monotonic() + CHILD_LIMIT_S
    chunks = []
    with os.fdopen(read, "rb") as pipe:
        while (left := deadline - time.monotonic()) > 0 and select.select([pipe], [], [], left)[0]:
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"the child said nothing to its end within {CHILD_LIMIT_S} s: killed")
    assert os.waitpid(pid, 0)[1] == 0
    return b"".join(chunks).decode()


def read_orders(first: int, second: int, rounds: int, taken_first: bool = True) -> str:
    """In the child: `rounds` times, `first` then `second` from a thread that never takes them; what
    ArrivalOrder read first each time, counted ("SIGINT 1500")."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
    for sig in SIGNALS:  # not the command line's latch, if a test installed it: holding() sets its own each round
        signal.signal(sig, signal.SIG_DFL)
    me, stop, go = os.getpid(), threading.Event(), threading.Event()
    block = bytes(1 << 20)

    def busy() -> None:  # on a CPU most of the time, without the GIL (hashlib lets it go for large inputs)
        while not stop.is_set():
            hashlib.sha256(block).digest()

    def send() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)  # a sender, not the tool: it never takes them
        while go.wait(DEADLINE_S) and not stop.is_set():
            go.clear()
            os.kill(me, first)
            deadline = time.monotonic() + DEADLINE_S
            while taken_first and first in signal.sigpending():  # the process's pending set, as ShdPnd
                if time.monotonic() > deadline:
                    break
            os.kill(me, second)

    with main_thread_only():
        threads = [threading.Thread(target=busy, daemon=True), threading.Thread(target=send, daemon=True)]
        for thread in threads:
            thread.start()
    seen: Counter[str] = Counter()
    try:
        for _ in range(rounds):
            with holding(), ArrivalOrder() as order:
                go.set()
                deadline = time.monotonic() + DEADLINE_S
                while received() < 2:  # both handled (the latch counts them in the main thread)
                    if time.monotonic() > deadline:
                        return f"timed out: {received()} of 2 signals handled"
                    stop.wait(0.001)  # the signals interrupt the wait; their handlers run here
                came = order.first()
            seen[signal.Signals(came).name if came else "none"] += 1
    finally:
        stop.set()
        go.set()
        for thread in threads:
            thread.join(DEADLINE_S)
    return " ".join(f"{name} {count}" for name, count in seen.most_common())


@pytest.mark.parametrize(
    ("first", "second"), [(signal.SIGINT, signal.SIGTERM), (signal.SIGTERM, signal.SIGINT)], ids=lambda s: s.name
)
def test_a_signal_sent_once_the_first_was_taken_is_read_second(first: signal.Signals, second: int) -> None:
    said = in_a_child(lambda: read_orders(first, second, ROUNDS))
    assert said == f"{first.name} {ROUNDS}", said


@pytest.mark.parametrize(
    ("first", "second"), [(signal.SIGINT, signal.SIGTERM), (signal.SIGHUP, signal.SIGTERM)], ids=lambda s: s.name
)
def test_a_signal_sent_right_after_a_lower_one_is_read_second(first: signal.Signals, second: int) -> None:
    said = in_a_child(lambda: read_orders(first, second, ROUNDS, taken_first=False))
    assert said == f"{first.name} {ROUNDS}", said


def _blocked(tid: int) -> set[int]:
    """The signals thread `tid` of this process blocks (SigBlk)."""
    with open(f"/proc/self/task/{tid}/status") as status:
        mask = next(int(line.split()[1], 16) for line in status if line.startswith("SigBlk:"))
    return {sig for sig in range(1, 65) if mask & (1 << (sig - 1))}


def test_the_tools_threads_block_the_three_signals() -> None:
    asked = threading.Event()
    blocked: list[set[int]] = []
    thread = start_thread(lambda: (blocked.append(_blocked(threading.get_native_id())), asked.set()), "test")
    assert asked.wait(10)
    thread.join(10)
    assert set(SIGNALS) <= blocked[0]
    assert not set(SIGNALS) & _blocked(threading.get_native_id())  # the starting thread's own mask is as it was


def test_richs_refresh_thread_blocks_the_three_signals() -> None:
    bar = Progress(console=Console(file=io.StringIO(), force_terminal=True), auto_refresh=True)
    _start(bar)
    try:
        refresh = bar.live._refresh_thread
        assert refresh is not None and refresh.native_id is not None
        assert set(SIGNALS) <= _blocked(refresh.native_id)
    finally:
        _stop(bar)


def test_threads_are_started_by_start_thread() -> None:
    """A new thread in the package goes through start_thread, or a pool through BlockedPool (or says here why
    not)."""
    package = Path(accept_order.__file__).parent
    found = {
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if any(call in path.read_text() for call in ("Thread(", "ThreadPoolExecutor"))
    }
    assert found == {"core/signal_order.py", "core/blocked_pool.py"}
