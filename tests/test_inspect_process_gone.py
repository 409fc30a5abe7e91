"""A server process that ends while inspect reads it (a reload's old worker, fresh-clone CI of a6b0191: observe's
mechanism reading met `IndexError` in inspect's looks, given a Server with no processes): inspect says it as it says
a pid that does not exist (NotServing), and observe's reading passes over it for a worker still there.

The process is a real listener killed and reaped between find_server's read of the pid asked about and its read of
the listeners' holders: the end comes on the read itself, not on a sleep."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest
from listening_process import NEVER_ACCEPTING, listening, replying

from accept_order.core.errors import NotServing
from accept_order.experiments.inspect.run import inspect
from accept_order.experiments.observe.mechanism import mechanism_of
from accept_order.experiments.observe.server import Watched
from accept_order.probes import serving
from accept_order.probes.proc_processes import ProcessInfo


def _ends_at_its_second_read(monkeypatch: pytest.MonkeyPatch, victim: int) -> None:
    """serving's process_info, with `victim` killed and reaped as it is read the second time (the first is the
    pid inspect was given; the second, of the listener holders found)."""
    real: Callable[[int], ProcessInfo | None] = serving.process_info
    reads = 0

    def reading(pid: int) -> ProcessInfo | None:
        nonlocal reads
        if pid == victim:
            reads += 1
            if reads == 2:
                os.kill(victim, signal.SIGKILL)
                os.waitpid(victim, 0)  # reaped: /proc/VICTIM is gone, as a worker's whose master waited for it
        return real(pid)

    monkeypatch.setattr(serving, "process_info", reading)


def test_a_process_that_ends_while_inspect_reads_it_is_said_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    with listening(NEVER_ACCEPTING) as (pid, _):
        _ends_at_its_second_read(monkeypatch, pid)
        with pytest.raises(NotServing, match=rf"^no process {pid}: it ended while it was read$"):
            inspect(pid=pid, samples=1)


def test_observe_passes_over_a_worker_that_ends_while_read_for_one_still_there(monkeypatch: pytest.MonkeyPatch) -> None:
    with replying(b"") as (ending, port), replying(b"") as (staying, _):
        _ends_at_its_second_read(monkeypatch, ending)
        watched = Watched(f"port {port}", "python3", None, (ending, staying), (), (port,), (), ending)
        found = mechanism_of(watched)
        assert found is not None  # read from the one still there: its one thread waits in accept()
        assert os.path.exists(f"/proc/{staying}") and not os.path.exists(f"/proc/{ending}")
