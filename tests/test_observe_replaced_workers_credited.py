"""observe does not say the workers that replaced the watched ones 'are not watched' beside the note that credits
them: HAProxy's master-worker mode reloaded (SIGUSR2) in the window, its old worker exiting, read 'every worker
watched had exited: haproxy serves on in pid N, started 0.1 s into the window (see the note above), which observe does
not watch' next to the note saying what pid N accepted while observed (the kernel's count). A master that runs on
with the new workers as its children read '... as the workers that replaced them are not watched' (server.py).

The witness is HAProxy's: the new worker is the pid its replies name after the reload, a child of the master."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from haproxy_by_hand import config
from observed_under import CAP_S as OBSERVE_CAP_S
from test_observe_haproxy_reload import answered_by_another, ask, master_worker

from accept_order.experiments.observe.run import observe
from accept_order.experiments.observe.server import every_worker_exited
from accept_order.servers.launched.base import free_port


def test_replacing_workers_credited_are_not_said_unwatched(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port))
    started, failed, after = threading.Event(), [], []
    with master_worker(path, port) as (master, old):

        def reload() -> None:
            try:
                if started.wait(OBSERVE_CAP_S):
                    os.kill(master, signal.SIGUSR2)  # re-executes and forks a new worker; the old one exits
                    after.append(answered_by_another(port, old, Counter(), [old] * 64))
                    ask(port)
            except BaseException as exc:  # said by the test, not lost in the thread
                failed.append(exc)

        driver = threading.Thread(target=reload, daemon=True)
        driver.start()
        result = observe(old, duration_s=OBSERVE_CAP_S, on_snapshot=lambda _: started.set())  # ends as old exits
        driver.join(OBSERVE_CAP_S)
        children = {int(c) for c in Path(f"/proc/{master}/task/{master}/children").read_text().split()}
    assert not failed, failed
    if not result.traced:
        pytest.skip(f"no kernel count of who accepts: {result.source}")
    assert after and set(after) <= children, (after, children)  # the master's new worker answers
    assert result.reloaded is not None and result.reloaded.accepts, result.notes  # credited, by the kernel's count
    exited = [note for note in result.notes if note.startswith("every worker watched had exited")]
    assert exited and "not among the workers above" in exited[0], result.notes
    assert not any("does not watch" in note or "are not watched" in note for note in result.notes), result.notes


def test_a_master_running_on_with_credited_replacements() -> None:
    """The other wording, where the master runs on with other children (this process, and a child of its own)."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        credited = every_worker_exited(os.getpid(), None, counted=True)
        unwatched = every_worker_exited(os.getpid(), None)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)
    assert "not among those above" in credited and "not watched" not in credited, credited
    assert unwatched.endswith("as the workers that replaced them are not watched"), unwatched
