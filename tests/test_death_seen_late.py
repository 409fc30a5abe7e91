"""A worker whose death the load did not see (on a busy machine its exit can land after the last connection):
the check after the load still says what the run drove, as the error raised during the load does (a CI run
under load printed only "worker 1 exited ...", and test_faults' accounting found nothing to add up)."""

from __future__ import annotations

import pytest

from accept_order import run
from accept_order.core.errors import WorkerError
from accept_order.servers.pool import WorkerPool


def test_a_death_seen_after_the_load_says_what_it_drove(monkeypatch: pytest.MonkeyPatch) -> None:
    def dead(self: WorkerPool) -> None:
        raise WorkerError("worker 1 (pid 4242) exited with status 1", 1)

    # called only when a death wakes the load (none here), then once the load is over: that call raises
    monkeypatch.setattr(WorkerPool, "check_alive", dead)
    with pytest.raises(WorkerError) as info:
        run(mode="blocking", workers=3, connections=6)
    said = "worker 1 (pid 4242) exited with status 1; the run stopped after 6 connections (6 served, 0 failed)"
    assert str(info.value) == said
