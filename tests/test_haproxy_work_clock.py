"""The HAProxy the tool launches burns --work of its own thread's CPU per request, not what a shared clock lets it.

Its Lua action first spun until core.now() had moved by the work, the time HAProxy cached at its last poll, which a
loop inside one action does not refresh: 200 requests one after another burned 3 to 12 ms of CPU each on average,
and strace saw one spin 575 ms without a system call. Then it read os.clock(), the CPU of the whole process, which
threads spinning at once advance together: with 4 threads on 2 CPUs each burned 0.67 ms a request for --work 1ms
(0.70 with 2), where nginx's workers burned 1.04. It reads its thread's own CPU now, through Debian's lua-posix
(posix.time.clock_gettime(CLOCK_THREAD_CPUTIME_ID)). A thread's clock is shared too, by the thread's streams: HAProxy
yields a Lua action every 10,000 instructions and runs the others, whose spins then moved it (one thread, 4
connections, --work 20ms: 8.1-9.1 ms of CPU a request), so the action yields only where it says and counts its own
slices: 20.13-20.14 ms.

Here latency's own launch of Debian's HAProxy fills a pool and makes requests over it. The witness is the kernel's CPU
time of each HAProxy thread over the run (/proc/PID/task/TID/schedstat, the run's counters) against the requests the
replies counted: at least about the work each (a request's own slices of its thread's CPU reach the work before it is
answered, whoever else spins), and never many times it. Where lua-posix is missing the run says its clock was the
process's, which the last test forces by hiding the module from HAProxy's Lua (LUA_CPATH_5_3)."""

from __future__ import annotations

import glob
import os

import pytest

from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.core.work_clocks import PROCESS_CLOCK, THREAD_CLOCK
from accept_order.experiments import session
from accept_order.render.evidence import work_clock_line
from accept_order.servers.launched.haproxy import haproxy_missing

if haproxy_missing():
    pytest.skip(f"haproxy launched runs: {haproxy_missing()}", allow_module_level=True)

# lua-posix where HAProxy's Lua 5.3 looks for C modules (Debian's, a local build's): the tool's say is not the witness
LUA_POSIX = glob.glob("/usr/lib/*/lua/5.3/posix.so") + glob.glob("/usr/local/lib/lua/5.3/posix.so")
WORK_US = 1000
RUNS = 5
REQUESTS = 320
SERVER = ServerSpec(kind="haproxy", mode="threads", workers=4, work_us=WORK_US, accept_batch=64)
LOAD = ConcurrentLoad(connections=REQUESTS, concurrency=32, requests_per_connection=0, pool=True)


def cpu_per_request_s(server: ServerSpec, load: ConcurrentLoad) -> float:
    """One run's CPU of every HAProxy thread (the kernel's) over the requests served; skips without lua-posix."""
    if not LUA_POSIX:
        pytest.skip("Debian's lua-posix is missing: HAProxy's threads time --work by their process's CPU")
    result = session.run_latency(server, load)
    assert result.evidence.get("work_clock") == THREAD_CLOCK, result.evidence.get("work_clock")
    assert result.errors == {} and result.ok == load.connections and sum(result.served) == result.ok
    assert all(c.cpu_s is not None for c in result.counters)
    return sum(c.cpu_s or 0 for c in result.counters) / result.ok


def test_each_request_burns_its_work_of_its_threads_cpu() -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: HAProxy's threads never spin at once, so the process's clock would pass here too")
    per_request = [cpu_per_request_s(SERVER, LOAD) for _ in range(RUNS)]
    # HAProxy's own part of a request is about 0.1 ms; each spin ends once its own thread has burned the work, however
    # many spin at once (on the process's clock, 4 threads on 2 CPUs each burned 0.67-0.79 of it); at most twice the
    # work (the cached clock's spins were 13-40 ms a request)
    work_s = WORK_US / 1e6
    assert all(0.95 * work_s <= cpu <= 2 * work_s for cpu in per_request), per_request


def test_one_threads_requests_each_burn_their_own_work() -> None:
    """One thread, 4 connections at once: each request's spin is its own, not the thread's streams' together."""
    work_us = 20_000
    server = ServerSpec(kind="haproxy", mode="threads", workers=1, work_us=work_us)
    load = ConcurrentLoad(connections=40, concurrency=4, requests_per_connection=0, pool=True)
    cpu = cpu_per_request_s(server, load)
    assert 0.95 * work_us / 1e6 <= cpu <= 2 * work_us / 1e6, cpu  # 8.1-9.1 ms when the streams' spins moved it


def test_a_long_work_comes_back_to_haproxys_scheduler() -> None:
    """The action yields between slices: HAProxy's watchdog aborts a thread that runs 2 s without coming back to its
    scheduler ('Thread 1 is about to kill the process' for --work 3s in one slice), and its Lua would yield on its own
    every 10,000 instructions but for tune.lua.forced-yield, which the config raises."""
    work_us = 2_500_000
    server = ServerSpec(kind="haproxy", mode="threads", workers=1, work_us=work_us)
    load = ConcurrentLoad(connections=1, concurrency=1, requests_per_connection=0, pool=True, timeout_s=30)
    cpu = cpu_per_request_s(server, load)
    assert work_us / 1e6 <= cpu <= 1.2 * work_us / 1e6, cpu


def test_a_run_says_where_the_work_was_timed_by_the_processs_cpu(
    monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    # HAProxy's Lua 5.3 finds C modules by LUA_CPATH_5_3 (before LUA_CPATH): none of lua-posix's there
    monkeypatch.setenv("LUA_CPATH_5_3", f"{tmp_path}/?.so")
    monkeypatch.setenv("LUA_PATH_5_3", f"{tmp_path}/?.lua")
    result = session.run_latency(SERVER, LOAD)
    assert result.errors == {} and sum(result.served) == REQUESTS  # the work still runs, on the old clock
    assert result.evidence.get("work_clock") == PROCESS_CLOCK
    line = work_clock_line(result.evidence)
    assert line is not None and "HAProxy timed --work by its process's CPU" in line.plain


def test_one_thread_on_the_processs_cpu_is_not_said_to_burn_less(
    monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    """With one thread the process's CPU is that thread's own: each request burned the work (1.08 ms of CPU a request
    for --work 1ms, lua-posix hidden), so no line may say threads spinning at once made it burn less."""
    monkeypatch.setenv("LUA_CPATH_5_3", f"{tmp_path}/?.so")
    monkeypatch.setenv("LUA_PATH_5_3", f"{tmp_path}/?.lua")
    server = ServerSpec(kind="haproxy", mode="threads", workers=1, work_us=WORK_US)
    load = ConcurrentLoad(connections=40, concurrency=4, requests_per_connection=0, pool=True)
    result = session.run_latency(server, load)
    assert result.errors == {} and sum(result.served) == load.connections
    # the witness: the kernel's CPU of the one thread, about the work a request
    cpu = sum(c.cpu_s or 0 for c in result.counters) / result.ok
    assert 0.95 * WORK_US / 1e6 <= cpu, cpu
    assert result.evidence.get("work_clock") == THREAD_CLOCK and work_clock_line(result.evidence) is None
