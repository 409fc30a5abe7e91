"""The latency model of a mode steered by the client's CPU has the workers those CPUs can reach.

`latency -m incoming-cpu -w 3 -c 20 --work 500us` on 2 CPUs served 1996/1004/0: listener i is CPU i's, and no
client runs on a CPU 2. The model spread a hash over 3 workers, predicted p50 3.28 ms against 6.24 measured and
put the 1.81x p99 down to the load generator and other processes; over the 2 workers reached it predicts 6.15
against 6.02. With the load generator on CPU 0 alone (--load-cpus 0) one worker is reached.
"""

from __future__ import annotations

from io import StringIO

import pytest
from rich.console import Console

import accept_order
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.model_report import model_report
from accept_order.servers.modes import MODES


@pytest.mark.parametrize("mode", ["incoming-cpu", "reuseport-cpu"])
def test_a_load_on_one_cpu_reaches_one_worker_and_the_model_has_one(mode: str) -> None:
    if reason := MODES[mode].unavailable():
        pytest.skip(reason)
    spec = ServerSpec(mode=mode, workers=2, work_us=200)
    load = ConcurrentLoad(connections=400, concurrency=4, cpus=(0,), driver="epoll")
    result = accept_order.latency(spec, load)
    assert result.served == (400, 0)  # the kernel's side, by the replies: CPU 0's listener, worker 0's
    assert result.model is not None and result.model.workers == 1
    assert result.model.p50_ms >= 3 * 0.2  # one worker for the 4 clients: the median waits behind the other 3
    out = StringIO()
    Console(file=out, width=1000).print(*model_report([result]))
    assert f"the workers the client's CPUs reach, a listener per CPU, are the model's ({mode} 1 of 2)" in out.getvalue()


def test_other_modes_keep_every_worker() -> None:
    spec = ServerSpec(mode="reuseport", workers=2, work_us=200)
    result = accept_order.latency(spec, ConcurrentLoad(connections=200, concurrency=4, cpus=(0,), driver="epoll"))
    assert result.model is not None and result.model.workers == 2
