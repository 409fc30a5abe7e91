"""observe of HAProxy reloaded twice in one window names each hand-off and credits each process its own accepts.

observe looked for a reload's newcomers once, after the window: those holding the listener then. Reloaded twice
(master-worker, `kill -USR2` twice), the first new worker soft-stops at the second reload and exits before the window
ends, so only the second was found: the first hand-off, and every connection the first new worker accepted, were said
nowhere. The accept watch now counts the threads of the server's names too, and each process it names that is not a
worker is read while it runs (newcomers.py): the result keeps every newcomer in the order they started, when, what
each accepted, and which had left by the end.

The witnesses are HAProxy's: each reply names the pid that served it (one connection a request), so each newcomer's
accepts are the replies naming it, and /proc says the first new worker exited (the master reaped it). The watched
worker is kept alive through both reloads by a TCP session through it, which a soft stop waits for."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import run_cli, wait_for
from haproxy_by_hand import START_TIMEOUT_S, answered_by_new, haproxy, held_config, held_session, master_worker
from haproxy_by_hand import started as haproxy_started
from network import pid_answering
from observed_under import observed_under

from accept_order.experiments.documents import save
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import verdict
from accept_order.servers.launched.base import free_port
from accept_order.servers.launched.haproxy import haproxy_missing

if haproxy_missing():
    pytest.skip(f"a real HAProxy: {haproxy_missing()}", allow_module_level=True)

REQUESTS = 20  # to each process in turn
SNAPSHOTS_BETWEEN = 2  # intervals closed between a newcomer's last request and the next reload (see drive)


def _reaped(pid: int) -> bool:
    """The process has exited and been reaped (no /proc entry), or is a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_two_master_worker_reloads_in_one_window_each_named_with_its_accepts(tmp_path: Path) -> None:
    """HAProxy -W, `kill -USR2` of its master twice: each new worker is the master's child."""
    with contextlib.ExitStack() as stack:
        port, path, held = _configured(tmp_path, stack)
        master, old = stack.enter_context(master_worker(path, port, threads=2))
        stack.enter_context(held())
        result, served, news, old_alive = _across(port, old, lambda _: os.kill(master, signal.SIGUSR2))
    _check(result, served, old, news, old_alive, tmp_path)


def test_two_sf_reloads_in_one_window_each_named_with_its_accepts(tmp_path: Path) -> None:
    """HAProxy started twice more with -sf, each naming the one before: no newcomer is a child of the one watched."""
    started: list[subprocess.Popen[bytes]] = []

    def reload(latest: int) -> None:
        started.append(haproxy_started(tmp_path / "haproxy.cfg", "-sf", str(latest)))  # tells `latest` to finish

    with contextlib.ExitStack() as stack:
        port, path, held = _configured(tmp_path, stack)
        old = stack.enter_context(haproxy(path, port, threads=2)).pid
        stack.enter_context(held())
        try:
            result, served, news, old_alive = _across(port, old, reload)
        finally:
            for process in started:
                process.kill()
                process.wait(10)
    assert news == [p.pid for p in started], (news, started)
    _check(result, served, old, news, old_alive, tmp_path)


def _configured(
    tmp_path: Path, stack: contextlib.ExitStack
) -> tuple[int, Path, Callable[[], contextlib.AbstractContextManager[object]]]:
    """The config's port and path, and what opens the TCP session through the watched process (its soft stop waits
    for it)."""
    port, held_port = free_port("127.0.0.1"), free_port("127.0.0.1")
    backend = socket.create_server(("127.0.0.1", 0))
    stack.callback(backend.close)
    path = tmp_path / "haproxy.cfg"
    path.write_text(held_config(port, held_port, backend.getsockname()[1]))
    # the session through the old process up: it outlives its stop
    return port, path, lambda: held_session(held_port, backend)


def _across(port: int, old: int, reload: Callable[[int], None]) -> tuple[ObserveResult, Counter[int], list[int], bool]:
    """observe while REQUESTS go to `old`, then `reload(the newest)` and REQUESTS to the newcomer, twice. (The result;
    the requests each pid served, as its replies said; the newcomers in turn; whether `old` was still there.)"""
    served: Counter[int] = Counter()
    news: list[int] = []
    snapshots = [0]
    # `kept`: the driving thread lives on until observe has returned, since a process it starts (-sf's, which
    # dies_with it: PR_SET_PDEATHSIG is the forking thread's) must run to the window's end
    kept = threading.Event()

    def drive() -> None:
        for _ in range(REQUESTS):
            served[pid_answering(port)] += 1
        for _ in range(2):
            reload(news[-1] if news else old)
            news.append(answered_by_new(port, {old, *news}, served))
            for _ in range(REQUESTS):
                served[pid_answering(port)] += 1
            # a few intervals before the next reload: observe's looks (every 100 ms) read the newcomer while it runs
            # (waited for on observe's own snapshots, not a sleep)
            enough = snapshots[0] + SNAPSHOTS_BETWEEN
            wait_for(lambda: snapshots[0], lambda n, at=enough: n >= at, START_TIMEOUT_S, "snapshots")
        wait_for(lambda: _reaped(news[0]), bool, START_TIMEOUT_S, "the first newcomer's exit")

    def snapshot(_: object) -> None:
        snapshots[0] += 1

    try:
        result = observed_under(drive, kept, port=port, on_snapshot=snapshot)
        old_alive = not _reaped(old)
    finally:
        kept.set()
    return result, served, news, old_alive


def _check(
    result: ObserveResult, served: Counter[int], old: int, news: list[int], old_alive: bool, tmp_path: Path
) -> None:
    if not result.traced:
        pytest.skip(f"no kernel count of who accepts: {result.notes}")
    assert old_alive, "the watched worker exited: its held session should have kept it"
    first, second = news
    assert set(served) == {old, first, second}, served  # no reply from another process
    reload = result.reloaded
    assert reload is not None, result.notes
    # each hand-off in the order HAProxy's replies saw them, with what each accepted (as many as its replies)
    assert reload.pids == (first, second), (reload, news)
    assert reload.accepts == (served[first], served[second]), (reload, served)
    assert reload.left == (first,), reload
    assert reload.takes_over is True, reload  # a reload of the server watched, not another beside it (-sf: in turn)
    assert len(reload.starts) == 2 and reload.starts[0] <= reload.starts[1], reload
    assert sum(w.accepts or 0 for w in result.workers) == served[old], (result.workers, served)
    each = (
        f"pid {first} {reload.starts[0]:.1f} s into the window (accepted {served[first]} connections; exited before "
        f"the window ended), then pid {second} {reload.starts[1]:.1f} s into the window (accepted {served[second]} "
        "connections; holds its listener as the window ends)"
    )
    assert any(each in note for note in result.notes), result.notes
    line = f"haproxy handed its listener on 2 times, {reload.starts[0]:.1f} and {reload.starts[1]:.1f} s in: to pid "
    assert any(f"{line}{first}, then pid {second}, which serves since" in said for said in verdict(result)), [
        said for said in verdict(result) if "handed" in said or "reloaded" in said
    ]
    saved = tmp_path / "observe.json"
    save(str(saved), "observe", result)
    assert ObserveResult.from_dict(json.loads(saved.read_text())).reloaded == reload
    shown = run_cli(["show", str(saved)], columns=3000)
    assert shown.exit_code == 0 and each in shown.stdout, shown.output
