"""The queueing model took lighttpd's workers to accept one connection a wakeup (ModeInfo.own_batch left at 1 by
57afc5d), where lighttpd accepts up to 100 per readiness event of its listener (network.c: 'accept()s at most 100
new connections per fdevent'): bpftrace saw 250 queued connections taken in wakeups of 100, 100 and 50, in both
modes. The model now takes lighttpd's 100.

The witness is the kernel: bpftrace's count of accepts between a worker's waits, with Debian's lighttpd launched as
the tool launches it, its workers stopped while the connections queue, then let go."""

from __future__ import annotations

import os

import pytest
from accepts_per_wakeup import BPFTRACE, counted_after_queueing, program, runs_of

from accept_order.analysis.model_check import discipline_of
from accept_order.core.spec import ServerSpec
from accept_order.servers.launched.lighttpd import LIGHTTPD_MODES, LighttpdServer, lighttpd_missing
from accept_order.servers.registry import checked

QUEUED = 250  # more than two workers' first wakeups can take at 100 each: each of those takes its whole batch
ACCEPTS = ("accept4", "accept")
WAITS = ("epoll_wait", "epoll_pwait", "poll", "ppoll")


@pytest.mark.parametrize("mode", sorted(LIGHTTPD_MODES))
def test_the_model_takes_lighttpds_own_batch(mode: str) -> None:
    spec = ServerSpec(kind="lighttpd", mode=mode, workers=2)
    assert discipline_of(LIGHTTPD_MODES[mode], spec) == ("shared", 100)


@pytest.mark.skipif(lighttpd_missing() is not None, reason=str(lighttpd_missing()))
@pytest.mark.skipif(os.geteuid() != 0 or BPFTRACE is None, reason="needs root and bpftrace")
@pytest.mark.parametrize("mode", sorted(LIGHTTPD_MODES))
def test_lighttpds_own_batch_is_what_the_kernel_counts(mode: str) -> None:
    with LighttpdServer(checked(ServerSpec(kind="lighttpd", mode=mode, workers=2, backlog=1024))) as server:
        workers = list(server.pids)
        script = program(workers, ACCEPTS, WAITS)
        out = counted_after_queueing(workers, server.address, QUEUED, script, b"HTTP/1.", timeout_s=30)
    runs = runs_of(out)
    assert sum(k * v for k, v in runs.items()) == QUEUED, out
    assert max(runs) == LIGHTTPD_MODES[mode].own_batch, out  # the first wakeups take a whole batch, none more
