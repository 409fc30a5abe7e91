"""observe of HAProxy does not call a second HAProxy on its port its reload. HAProxy binds with SO_REUSEPORT, so
another one started with a config of the same port serves beside it; observe's look for a reload's newcomer (a
process of the program started in the window that holds a listener on the port, reloaded.py) found it, and the
verdict said 'haproxy reloaded 0.3 s in, and pid N, which serves since, is not counted' of a server that was never
reloaded. A newcomer is now said to take over only where one of the watched processes is among its ancestors or its
command line names one after -sf or -st (as a reload's does: test_observe_haproxy_reload).

The witnesses are HAProxy's: after the window both processes answer on the port (each reply names its pid), so the
first was not replaced."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from pathlib import Path

from cluster import dies_with
from haproxy_by_hand import START_TIMEOUT_S, config, haproxy, pid_answering

from accept_order.experiments.observe.run import observe
from accept_order.experiments.observe.verdict import verdict
from accept_order.servers.launched.base import free_port

OBSERVE_CAP_S = 120.0  # the window ends once the second answers; this only bounds a hang
OFF = "    tune.listener.multi-queue off"  # so that the hand-off line, with its reload clause, is said


def until_answered_by(port: int, pid: int) -> None:
    """Ask until a reply names `pid` (the kernel spreads connections over the two listeners by their hash)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        with contextlib.suppress(OSError):
            if pid_answering(port) == pid:
                return
        assert time.monotonic() < deadline, f"pid {pid} never answered"
        time.sleep(0.01)  # a server's start-up and the kernel's hash: there is no event to wait on


def test_a_second_haproxy_on_the_port_is_not_called_a_reload(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, OFF))
    second: list[subprocess.Popen[bytes]] = []
    failed: list[BaseException] = []
    started, done, kept = threading.Event(), threading.Event(), threading.Event()
    with haproxy(path, port) as first:

        def drive() -> None:
            try:
                if not started.wait(OBSERVE_CAP_S):
                    return
                second.append(
                    subprocess.Popen(  # no -sf, no -st: a server of its own beside the first
                        ["haproxy", "-db", "-f", str(path)],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        preexec_fn=dies_with(os.getpid()),
                    )
                )
                until_answered_by(port, second[0].pid)
            except BaseException as exc:  # said by the test, not lost in the thread
                failed.append(exc)
            finally:
                done.set()
                kept.wait(OBSERVE_CAP_S)  # the second dies with this thread: it must outlive the window

        driver = threading.Thread(target=drive, daemon=True)
        driver.start()
        try:
            result = observe(first.pid, duration_s=OBSERVE_CAP_S, on_snapshot=lambda _: started.set(), until=done)
            assert not failed, failed
            until_answered_by(port, first.pid)  # the first serves on: no reload replaced it
            until_answered_by(port, second[0].pid)
        finally:
            kept.set()
            driver.join(OBSERVE_CAP_S)
            for process in second:
                process.kill()
                process.wait(10)
    new = second[0].pid
    assert result.reloaded is not None and result.reloaded.pids == (new,), (result.reloaded, result.notes)
    assert result.reloaded.takes_over is False, result.reloaded
    lines = verdict(result)
    assert not any("haproxy reloaded" in line for line in lines), lines
    said = f"pid {new}, another haproxy started {result.reloaded.after_s:.1f} s in on its port, not its reload"
    assert any(said in line for line in lines), lines
    note = f"haproxy started pid {new} since observe chose its workers"
    assert any(n.startswith(note) and "another server's on its port, not its reload" in n for n in result.notes)
