"""Review RF2 of 6f0a29d: an interrupt before a command's body says 'nothing was started'; inside the body it said
'all workers stopped' from the body's first line, though the body plans and imports for half a second before any
worker exists (timeout -s INT at 24 delays: run said it from 0.45 s, its workers forked at 1.1 s; latency from 0.45
to 1.0 s, bpftrace's sched_process_fork as witness). The line now says workers were stopped once an owner of
processes (core/started.Started: the pool, a server, the load) has begun to start."""

from __future__ import annotations

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core import processes
from accept_order.experiments import session
from accept_order.servers import pool


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt  # what a SIGINT landing there raises


def test_a_signal_in_the_body_before_any_worker_says_nothing_was_started(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "plan", _interrupt)  # the body's planning, before the pool is made
    line = assert_one_error_line(run_cli(["latency", "-w", "2", "-n", "10"]), 130, "interrupted; nothing was started")
    assert "workers" not in line


def test_a_signal_as_the_workers_start_says_they_were_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    def first_worker_then_interrupt(proc: object) -> None:
        processes.start_child(proc)  # type: ignore[arg-type]
        raise KeyboardInterrupt  # the signal landing just after the first worker forked: the pool ends it

    monkeypatch.setattr(pool, "start_child", first_worker_then_interrupt)
    assert_one_error_line(run_cli(["latency", "-w", "2", "-n", "10"]), 130, "interrupted; all workers stopped")
    # the next command's body starts with nothing of its own started
    monkeypatch.setattr(session, "plan", _interrupt)
    assert_one_error_line(run_cli(["run", "-w", "2"]), 130, "interrupted; nothing was started")
