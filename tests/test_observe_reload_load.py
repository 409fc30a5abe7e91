"""observe of a one-process server reloaded in its window does not count the newcomer's connections as its own.

The load observe reads gives a connection no look saw held (opened and closed between two looks) to the worker
where the server has one process: it must have been that one's. A reload's newcomer (HAProxy's `-sf OLD`) serves the
same port from its start, so by hand (HAProxy -W, 6 requests to the old worker, 27 to the new one in the window) the
old worker was said to have received 2,640 bytes where it received 480. Those given to it for being the only one from
the newcomer's start on are now counted to no worker (load.py's taken_back), and the reload's note says how many.

The witnesses are HAProxy's and the kernel's: each reply names the pid that served it, each request is one data
segment on a connection of its own, so the data segments the old process received are at most the requests its
replies say it served. The old process is kept alive past the newcomer's start (a TCP session through it, which a
soft stop waits for), so the newcomer's connections close while it is still watched."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from haproxy_by_hand import START_TIMEOUT_S, haproxy, held_config, held_session
from haproxy_by_hand import started as haproxy_started
from network import pid_answering

from accept_order.experiments.observe.run import observe
from accept_order.servers.launched.base import free_port

OLD_REQUESTS = 10  # served by the watched process before the newcomer starts
NEW_REQUESTS = 30  # served by the newcomer while the watched one still runs
OBSERVE_CAP_S = 120.0  # the window ends when the driving is done; this only bounds a hang
AFTER_SNAPSHOTS = 3  # intervals closed after the last request, so that its close is announced in the window


def test_a_newcomers_connections_are_not_the_watched_process_load(tmp_path: Path) -> None:
    port, held_port = free_port("127.0.0.1"), free_port("127.0.0.1")
    backend = socket.create_server(("127.0.0.1", 0))
    path = tmp_path / "haproxy.cfg"
    path.write_text(held_config(port, held_port, backend.getsockname()[1]))
    started: list[subprocess.Popen[bytes]] = []
    with contextlib.ExitStack() as stack:
        stack.callback(backend.close)
        old = stack.enter_context(haproxy(path, port, threads=2)).pid
        held = stack.enter_context(held_session(held_port, backend))  # the session through the old process is up
        served = {"old": 0, "new": 0}
        snapshots, started_event, done, kept = [0], threading.Event(), threading.Event(), threading.Event()
        after: list[int] = []  # the snapshot count once the last request was answered
        failed: list[BaseException] = []

        def snapshot(_: object) -> None:
            snapshots[0] += 1
            started_event.set()
            if after and snapshots[0] >= after[0] + AFTER_SNAPSHOTS:
                done.set()

        def drive() -> None:
            try:
                if not started_event.wait(OBSERVE_CAP_S):
                    return
                for _ in range(OLD_REQUESTS):
                    assert pid_answering(port) == old
                    served["old"] += 1
                # binds beside the old process, then tells it to stop listening (-sf)
                started.append(haproxy_started(path, "-sf", str(old)))
                deadline = time.monotonic() + START_TIMEOUT_S
                while served["new"] < NEW_REQUESTS:
                    with contextlib.suppress(OSError):
                        served["old" if pid_answering(port) == old else "new"] += 1
                        continue
                    assert time.monotonic() < deadline, "no HAProxy answered after the newcomer started"
                    time.sleep(0.02)  # the port between the old listener's close and the new one's: no event
                after.append(snapshots[0])
            except BaseException as exc:  # said by the test, not lost in the thread
                failed.append(exc)
                done.set()
            finally:
                kept.wait(OBSERVE_CAP_S)  # the newcomer dies with this thread: it must outlive the window

        driver = threading.Thread(target=drive, daemon=True)
        driver.start()
        try:
            result = observe(port=port, duration_s=OBSERVE_CAP_S, on_snapshot=snapshot, until=done)
            still = os.path.exists(f"/proc/{old}")
        finally:
            kept.set()
            driver.join(OBSERVE_CAP_S)
            for new in started:
                new.kill()
                new.wait(10)
        assert held.fileno() >= 0
    assert not failed, failed
    assert still, "the old process exited before the window ended: the newcomer's closes were not its to take"
    assert result.reloaded is not None and result.reloaded.pids == (started[0].pid,), (result.reloaded, result.notes)
    if result.closes_counted is None:
        pytest.skip(f"the kernel's announcements of closes were not read: {result.notes}")
    # each request one data segment on a connection of its own: the old process received no more than it served
    assert result.process_segments_in is not None
    assert result.process_segments_in <= served["old"], (result.process_segments_in, served, result.notes)
    assert any("counted to no worker" in note for note in result.notes), result.notes
