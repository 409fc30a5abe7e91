"""The queueing model took one connection per wakeup for every mode whose cap does not apply (ModeInfo.batches
False), where uvicorn's asyncio loop takes a queue until EAGAIN (bpftrace: 100 queued connections in 2 wakeups,
79 and 21) and Caddy's Go accept loop too (96 in one); uvloop takes one per wakeup. Each mode says its own batch
now (ModeInfo.own_batch, 0: until EAGAIN) and the model reads it: a latency run of uvicorn --loop asyncio -w 2
-c 32 --work 1ms (p99 134 ms measured, load 3.5) was predicted p50 = p99 = 19.4 ms, dev 0 (one at a time, two
workers in turn), and is 19.4/35.1 ms, dev 7.5, the queue taken whole by whichever worker comes back first.

The witness for uvicorn's loops is the kernel: bpftrace's count of accepts per wakeup, taken by the test beside
it (test_uvicorn_accepts_per_wakeup's uvicorn, stopped while connections queue, then let go)."""

from __future__ import annotations

import os
from pathlib import Path

import accepts_per_wakeup
import pytest
from accepts_per_wakeup import BPFTRACE, UVICORN_COUNTED, counted_uvicorn_once, runs_of

from accept_order.analysis.model_check import discipline_of
from accept_order.analysis.queueing import Arrivals, Service, simulate
from accept_order.core.spec import ServerSpec
from accept_order.servers.launched.caddy import CADDY_MODES
from accept_order.servers.launched.uvicorn import UVICORN_MODES, uvicorn_missing, uvloop_missing

QUEUED = 30


def test_the_model_takes_each_loops_own_batch() -> None:
    asyncio = discipline_of(UVICORN_MODES["asyncio"], ServerSpec(kind="uvicorn", mode="asyncio", workers=2))
    uvloop = discipline_of(UVICORN_MODES["uvloop"], ServerSpec(kind="uvicorn", mode="uvloop", workers=2))
    caddy = discipline_of(CADDY_MODES["netpoller"], ServerSpec(kind="caddy", mode="netpoller", workers=1))
    assert (asyncio, uvloop, caddy) == (("shared", 0), ("shared", 1), ("shared", 0))
    # what the batch changes in the model: 2 workers, 32 clients, 1 ms each
    one, whole = (
        simulate(2, "shared", Arrivals.closed(32), Service.deterministic(1.0), 4000, batch)
        for batch in (uvloop[1], asyncio[1])
    )
    assert one.percentile(99) == one.percentile(50) and whole.percentile(99) > 1.5 * whole.percentile(50)


@pytest.mark.skipif(uvicorn_missing() is not None, reason=str(uvicorn_missing()))
@pytest.mark.skipif(os.geteuid() != 0 or BPFTRACE is None, reason="needs root and bpftrace")
@UVICORN_COUNTED
@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_each_loops_own_batch_is_what_the_kernel_counts(tmp_path_factory: pytest.TempPathFactory, loop: str) -> None:
    if loop == "uvloop" and uvloop_missing():
        pytest.skip(str(uvloop_missing()))
    out = counted_uvicorn_once(tmp_path_factory, loop, QUEUED)  # the same count test_uvicorn_accepts_per_wakeup reads
    runs = runs_of(out)
    assert sum(k * v for k, v in runs.items()) == QUEUED, out
    own = UVICORN_MODES[loop].own_batch
    # one a wakeup: the model's 1; more than one in some wakeup: the loop takes until EAGAIN, the model's 0
    assert own == (1 if set(runs) == {1} else 0), (own, out)


def test_a_count_is_measured_once_in_pytests_temp_and_a_failed_one_again(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """counted_uvicorn_once (what both files' kernel tests read): one measurement a loop, its app under pytest's base
    temp, which pytest rotates (a tempfile folder in /tmp stayed after a pytest killed outright), and a measurement
    that failed is made again rather than kept."""
    folders: list[Path] = []

    def measured(folder: Path, loop: str, port: int, queued: int) -> str:
        folders.append(folder)
        if len(folders) == 1:
            raise RuntimeError("uvicorn did not start")
        return f"@runs[1]: {queued}"

    monkeypatch.setattr(accepts_per_wakeup, "counted_uvicorn", measured)
    monkeypatch.setattr(accepts_per_wakeup, "_UVICORN_COUNTED", {})
    with pytest.raises(RuntimeError):
        counted_uvicorn_once(tmp_path_factory, "asyncio", QUEUED)
    outs = [counted_uvicorn_once(tmp_path_factory, "asyncio", QUEUED) for _ in range(2)]
    assert outs == [f"@runs[1]: {QUEUED}"] * 2 and len(folders) == 2
    assert all(folder.is_relative_to(tmp_path_factory.getbasetemp()) for folder in folders), folders
