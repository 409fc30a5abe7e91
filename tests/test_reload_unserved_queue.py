"""reload says when a kill left the shared queue unserved: connections still queued at the end, and timeouts.

`reload --modes io-uring --how kill -c 50 --work 1ms`, one run of three: worker 0 served all 828 (io-uring's first
ring takes every connection), was killed at 1.0 s, and workers 1 and 2, their rings armed, accepted none after: 50
connections timed out and the listener's queue held 50 when the load ended (the run's own netlink reading). The row
said 'lost 100: not what the kernel promises' under 'kill, shared queue: only what it had accepted dies with it; the
shared queue stays', and nothing of the queue. The other two runs' workers took over (served 563/929/0, queue 0 at
the end, 50 lost without a reply, no timeout). Both files are those runs' own (tests/data/reload_io_uring_*).
"""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli

DATA = Path(__file__).parent / "data"


def test_a_kill_that_left_the_queue_unserved_says_so() -> None:
    out = run_cli(["show", str(DATA / "reload_io_uring_kill_stalled.json")], 1000).stdout
    assert (
        "io-uring kill: 50 connections still waited in the listener's accept queue when the load ended and 50 timed "
        "out: after worker 0 was killed, the other workers left the shared queue unserved (they accepted none in the "
        "whole run); served per worker 828/0/0"
    ) in out


def test_a_kill_the_others_took_over_from_says_nothing_of_it() -> None:
    out = run_cli(["show", str(DATA / "reload_io_uring_kill_taken_over.json")], 1000).stdout
    assert "still waited in the listener's accept queue" not in out and "lost 50" in out
