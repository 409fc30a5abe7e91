"""observe of HAProxy reloaded during its window: its config was read once, before the window, so a reload then
(master-worker's `kill -USR2`, Debian's unit's way; or a new `haproxy -sf OLD`) went unseen: the hand-off was said
as the config read before it, and where the old worker exited, 'every worker had exited: the server stopped while it
was observed' (by hand: HAProxy 2.6, -W, reloaded 3 s into an 8 s window, serving on in pid 4446).

observe now looks, once the window is over, for processes of the server's program started since it chose the
workers that hold its listener (reloaded.py), says when, that their accepts are not counted, and HAProxy's line says
the hand-off of the threads counted (the config read as observe began) and the new worker's (its config read after
the window). Here the config turns tune.listener.multi-queue off, then on before the reload.

The witnesses are HAProxy's and the kernel's: each reply names the thread and the pid that served it, so the new
worker is the pid the replies name after the reload; each old thread's accepts (bpftrace) equal the requests its
replies say it served, as they do only with the hand-off off (skipped where bpftrace cannot count)."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import run_cli
from haproxy_by_hand import START_TIMEOUT_S, config, haproxy, master_worker
from haproxy_by_hand import started as haproxy_started
from observed_under import observed_under

from accept_order.experiments.documents import save
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import verdict
from accept_order.servers.launched.base import free_port
from accept_order.servers.launched.haproxy import haproxy_missing

if haproxy_missing():
    pytest.skip(f"a real HAProxy: {haproxy_missing()}", allow_module_level=True)

REQUESTS = 40
OFF, ON = "    tune.listener.multi-queue off", "    tune.listener.multi-queue on"
STOPPED = "the server stopped while it was observed"


def ask(port: int) -> tuple[int, int]:
    """One request on a connection of its own: (the thread, the pid) its reply names."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/")
        words = connection.getresponse().read().split()
        return int(words[1]), int(words[3])
    finally:
        connection.close()


def answered_by_another(port: int, old: int, served: Counter[int], tids: list[int]) -> int:
    """The pid that answers once a reload's new process took the listener over from `old`; what `old` answered
    meanwhile is added to what its threads served (`tids`: its thread ids in creation order)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        with contextlib.suppress(OSError):
            thread, pid = ask(port)
            if pid != old:
                return pid
            served[tids[thread]] += 1
        assert time.monotonic() < deadline, "no new HAProxy process answered after the reload"
        time.sleep(0.02)  # polling a server's start-up: there is no event to wait on


def observed_across(port: int, old: int, reload: object) -> tuple[ObserveResult, Counter[int], set[int]]:
    """observe of the server on `port` while REQUESTS requests go to `old`, then `reload()` (its config turned on
    first), then REQUESTS more. (The result; the requests each of old's threads served, by thread id, as its replies
    said; the pids the replies after the reload named.)"""
    tids = sorted(int(t) for t in os.listdir(f"/proc/{old}/task"))  # thread ids in creation order
    # `kept`: the driving thread lives on until observe has returned, since a process it starts (-sf's new HAProxy,
    # which dies_with it: PR_SET_PDEATHSIG is the forking thread's) must hold the listener when the window ends
    kept = threading.Event()
    served: Counter[int] = Counter()
    after: set[int] = set()

    def drive() -> None:
        for _ in range(REQUESTS):
            thread, pid = ask(port)
            assert pid == old, (pid, old)
            served[tids[thread]] += 1
        reload()  # type: ignore[operator]
        after.add(answered_by_another(port, old, served, tids))
        after.update(ask(port)[1] for _ in range(REQUESTS))

    try:
        result = observed_under(drive, kept, port=port)
    finally:
        kept.set()
    if not result.traced:
        pytest.skip(f"no kernel count of who accepts: {result.source}")
    return result, served, after


def check(result: ObserveResult, served: Counter[int], after: set[int], path: Path, tmp_path: Path) -> None:
    """What both reloads must show: the new process named (the replies' pid), the counts the old threads' alone (as
    their replies say), each config's hand-off said where it belongs, and no server said stopped."""
    assert result.reloaded is not None, result.notes
    assert set(result.reloaded.pids) == after, (result.reloaded, after)
    (new,) = after
    # the kernel's count of the threads watched: what each served, as its replies said (multi-queue off, as read)
    assert {w.tid: w.accepts for w in result.workers if w.accepts} == dict(served), (result.workers, served)
    assert result.handoff is not None and result.handoff.hands_on is False, result.handoff
    assert result.reloaded.handoff is not None and result.reloaded.handoff.hands_on is True, result.reloaded
    line = (
        f"the thread that accepts a connection serves it: its config ({path}) turns tune.listener.multi-queue off, so "
        "none is handed on; the threads counted are those watched from the start, whose config was read as observe "
        f"began: haproxy reloaded {result.reloaded.after_s:.1f} s in, and pid {new}, which serves since, is not "
        f"counted: its config ({path}) turns tune.listener.multi-queue on, read after the window"
    )
    assert line in verdict(result), verdict(result)
    said = f"haproxy started pid {new} since observe chose its workers, {result.reloaded.after_s:.1f} s into the window"
    assert any(note.startswith(said) for note in result.notes), result.notes
    assert any(
        note.startswith(f"every worker watched had exited: haproxy serves on in pid {new}") for note in result.notes
    ) or any(w.exited_s is None for w in result.workers), result.notes
    assert not any(STOPPED in note for note in result.notes), result.notes
    saved = tmp_path / "observe.json"
    save(str(saved), "observe", result)
    shown = run_cli(["show", str(saved)], columns=2000)
    assert shown.exit_code == 0 and line in shown.stdout, shown.output


def test_a_master_worker_reload_in_the_window_is_said_with_each_config(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, OFF))
    with master_worker(path, port) as (master, old):

        def reload() -> None:
            path.write_text(config(port, ON))
            os.kill(master, signal.SIGUSR2)  # the master re-executes and forks a new worker with the new config

        result, served, after = observed_across(port, old, reload)
        children = {int(c) for c in Path(f"/proc/{master}/task/{master}/children").read_text().split()}
    assert after <= children, (after, children)  # the new worker is the master's: a reload, not another server
    check(result, served, after, path, tmp_path)


def test_a_new_process_started_with_sf_in_the_window_is_said_with_each_config(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, OFF))
    started: list[subprocess.Popen[bytes]] = []
    with haproxy(path, port) as process:

        def reload() -> None:
            path.write_text(config(port, ON))
            # it takes the port over and tells the old one to finish and exit (-sf)
            started.append(haproxy_started(path, "-sf", str(process.pid)))

        try:
            result, served, after = observed_across(port, process.pid, reload)
            assert {p.pid for p in started} == after, (started, after)
        finally:
            for new in started:
                new.kill()
                new.wait(10)
    check(result, served, after, path, tmp_path)
