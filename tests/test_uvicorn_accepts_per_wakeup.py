"""What each uvicorn loop does with a queue of connections when it wakes, against the kernel's own count.

The uvloop mode said its workers accept "until EAGAIN", as asyncio's do. bpftrace on the accept and epoll
tracepoints saw `uvicorn --workers 2 --loop uvloop` (uvloop 0.23) take 100 queued connections in 100 wakeups,
one accept4() each and never one that returned EAGAIN; `--loop asyncio` took them in two wakeups (79 and 21),
each loop ended by EAGAIN (asyncio's _accept_connection). Each mode's words now say what its loop does, and this
test holds them to the kernel's count: uvicorn started by hand as the mode says, its workers stopped while
connections queue, then let go under bpftrace."""

from __future__ import annotations

import os

import pytest
from accepts_per_wakeup import BPFTRACE, UVICORN_COUNTED, counted_uvicorn_once, eagains_of, runs_of

from accept_order.servers.launched.uvicorn import UVICORN_MODES, uvicorn_missing, uvloop_missing

QUEUED = 30

pytestmark = [
    pytest.mark.skipif(uvicorn_missing() is not None, reason=str(uvicorn_missing())),
    pytest.mark.skipif(os.geteuid() != 0 or BPFTRACE is None, reason="needs root and bpftrace"),
]


@UVICORN_COUNTED
@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_each_loops_words_match_what_the_kernel_counts(tmp_path_factory: pytest.TempPathFactory, loop: str) -> None:
    if loop == "uvloop" and uvloop_missing():
        pytest.skip(str(uvloop_missing()))
    out = counted_uvicorn_once(tmp_path_factory, loop, QUEUED)  # the same count test_model_own_batch reads
    runs, eagain = runs_of(out), eagains_of(out)
    assert sum(k * v for k, v in runs.items()) == QUEUED, out
    why = UVICORN_MODES[loop].why
    if loop == "uvloop":  # one accept a wakeup, and it never asks again to find the queue empty
        assert set(runs) == {1} and eagain == 0, out
        assert "one connection per wakeup" in why and "until EAGAIN" not in why, why
    else:  # the queue taken in few wakeups, each ended by an accept that found it empty
        assert max(runs) > 1 and eagain >= 1, out
        assert "until EAGAIN" in why, why
