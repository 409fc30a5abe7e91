"""A CPU-steered mode's model has no more workers than served, whatever CPUs the machine has.

5a14846's reach took an unpinned load generator to run on every CPU of the machine (os.cpu_count), but it runs
where the tool may: 'taskset -c 1 accept-order latency -m incoming-cpu -w 2 -c 20 --work 500us' (a container's
cpuset does the same) served 0/2000, every client on CPU 1, and the model spread a hash over both workers: p50 6.00
ms predicted against 11.7, the 1.44x p99 put down to 'something else'. Here this process's own CPUs are narrowed to
one, as taskset does, and the load is not pinned (--load-cpus not given): the replies say which worker served.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import accept_order
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.servers.modes import MODES


@pytest.fixture
def one_cpu() -> Iterator[int]:
    allowed = os.sched_getaffinity(0)
    if not {0, 1} <= allowed:
        pytest.skip("needs CPUs 0 and 1: the load on 1, kept off 0")
    os.sched_setaffinity(0, {1})
    try:
        yield 1
    finally:
        os.sched_setaffinity(0, allowed)


@pytest.mark.parametrize("mode", ["incoming-cpu", "reuseport-cpu"])
def test_a_load_kept_to_one_cpu_by_its_affinity_models_the_worker_that_served(one_cpu: int, mode: str) -> None:
    if reason := MODES[mode].unavailable():
        pytest.skip(reason)
    spec = ServerSpec(mode=mode, workers=2, work_us=200)
    result = accept_order.latency(spec, ConcurrentLoad(connections=400, concurrency=4, driver="epoll"))
    assert result.load.cpus == () and result.served == (0, 400)  # the kernel's side, by the replies: CPU 1's
    assert result.model is not None and result.model.workers == 1
