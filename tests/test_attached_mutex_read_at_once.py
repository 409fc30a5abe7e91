"""latency --attach reads the epolls of a young server's workers without waiting where their event loops have started.

The reading waits while a worker younger than 5 s watches none of the listeners another watches (93f6ece: nginx's
workers add the listener as their loop starts). nginx 1.22 with accept_mutex on adds it to no epoll at start
(ngx_event_process_init) and to the lock holder's only (ngx_trylock_accept_mutex), so its other workers never watch
it, and 'latency --attach' of one started a moment before waited until its workers were 5 s old (watched() took
3.2-3.3 s after a 1.3 s worker_pids, 4 workers, 3 of 3 tries at load 8; 0.00-0.01 s since). A worker whose main
thread sleeps in an epoll wait has started its loop: its reading is taken as it is."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for
from nginx_by_hand import nginx_by_hand
from python_processes import pythons
from test_attached_listener_queues_model import _epoll_watches, _held, _kernel_listeners, attached

from accept_order.experiments.latency.model_queues import attached_queues
from accept_order.servers import attached_epolls
from accept_order.servers.attached_start import STARTING_S, age_s

WORKERS = 3
START_TIMEOUT_S = 10.0
# the reading must begin this far under STARTING_S for its end to tell a wait from none (else the test skips)
MARGIN_S = 2.0

CONF = """daemon off;
worker_processes {workers};
pid {d}/nginx.pid;
events {{ worker_connections 256; accept_mutex on; }}
http {{
    access_log off;
    client_body_temp_path {d}/cb; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f;
    uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;
    server {{ listen 127.0.0.1:{port}; location / {{ return 200 "hi\\n"; }} }}
}}
"""


def _wchan(pid: int) -> str:
    """The witness of a thread's sleep, beside the syscall file the code reads: the kernel function it sleeps in."""
    try:
        return Path(f"/proc/{pid}/wchan").read_text().strip()
    except OSError:
        return "gone"


def test_a_young_nginx_with_accept_mutex_on_is_read_at_once(free_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = _counted_reads(monkeypatch)
    with nginx_by_hand(CONF, free_port, WORKERS, START_TIMEOUT_S) as nginx:  # every worker in epoll_wait
        listeners = _kernel_listeners(free_port)
        assert len(listeners) == 1, listeners
        oldest = max(age_s(pid) or STARTING_S for pid in nginx.workers)
        if oldest > STARTING_S - MARGIN_S:
            pytest.skip(f"nginx's workers were {oldest:.1f} s old before the reading began (a machine this slow)")
        read = attached_epolls.watched(nginx.workers, listeners)
        # the witness: the lock holder's epoll alone watches the listener (fdinfo), every worker holds it; with no
        # connection the holder keeps the lock, asleep in epoll_wait holding it
        watching = [bool(_epoll_watches(pid, listeners)) for pid in nginx.workers]
        assert sum(watching) == 1 and all(_held(pid, listeners) == listeners for pid in nginx.workers), watching
        assert [bool(w) for w in read["listeners_watched"]["workers"]] == watching, (read, watching)
        # every worker was in epoll_wait before the reading (nginx_by_hand): one read, none waited for (the count,
        # not the workers' age after it: a wait would have read again every POLL_S until they were 5 s old)
        assert len(reads) == 1, f"read {len(reads)} times: a worker asleep in its event loop was waited for"
        # the others were young: named, for the model to say what /proc cannot tell of them
        assert read["listeners_watched"]["young"] == [i for i, w in enumerate(watching) if not w], read


def _counted_reads(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every reading watched() takes, as it takes it."""
    reads: list[dict[str, Any]] = []
    read_watched = attached_epolls.read_watched

    def counted(pids: list[int], listeners: set[int]) -> dict[str, Any]:
        reads.append(read := read_watched(pids, listeners))
        return read

    monkeypatch.setattr(attached_epolls, "read_watched", counted)
    return reads


WORKER = """import select, sys
fd, registers = int(sys.argv[1]), sys.argv[2] == "holder"
loop = select.epoll()
if registers:
    loop.register(fd, select.EPOLLIN)
print("ready", flush=True)
loop.poll()  # its event loop: the holder's watches the listener, the other's (a lock's loser) watches nothing
"""


def test_a_young_worker_asleep_in_its_event_loop_is_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two young workers holding one listener, asleep in their epolls, one of which watches it: read once. (The
    worker that does not yet wait in its epoll is waited for: test_attached_threads_listener_queues_model.py.)"""
    listener = socket.create_server(("127.0.0.1", 0))
    inode = os.fstat(listener.fileno()).st_ino
    fd = str(listener.fileno())
    reads = _counted_reads(monkeypatch)
    shared = (listener.fileno(),)
    with listener, pythons((WORKER, fd, "holder"), (WORKER, fd, "other"), pass_fds=shared) as workers:
        assert all(w.stdout is not None and w.stdout.readline() == "ready\n" for w in workers)
        pids = [w.pid for w in workers]
        in_epolls = lambda w: all("epoll" in c for c in w)  # noqa: E731
        wait_for(lambda: [_wchan(pid) for pid in pids], in_epolls, START_TIMEOUT_S, "both in their epoll waits")
        found = attached_epolls.watched(pids, {inode})
        assert found["listeners_watched"]["workers"] == [[0], []], found
        assert found["listeners_watched"]["young"] == [1], found
        assert len(reads) == 1, f"read {len(reads)} times: a worker in its event loop was waited for"
        assert all((age_s(pid) or STARTING_S) < STARTING_S for pid in pids)  # young: the wait would have applied


SLEEPER = """import select, sys
print("ready", flush=True)
select.epoll().poll() if sys.argv[1] == "epoll" else sys.stdin.readline()
"""


def test_looping_reads_the_main_threads_wait() -> None:
    """A process asleep in an epoll wait loops; one asleep in a read does not."""
    with pythons((SLEEPER, "epoll"), (SLEEPER, "read")) as procs:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        pids = [p.pid for p in procs]
        asleep = lambda c: "epoll" in c[0] and c[1] not in ("0", "", "gone")  # noqa: E731
        wait_for(lambda: [_wchan(pid) for pid in pids], asleep, START_TIMEOUT_S, "both asleep")
        assert [attached_epolls.looping(pid) for pid in pids] == [True, False]


def test_a_mutex_read_of_young_workers_is_said_assumed() -> None:
    """Young workers asleep in epoll watching none read as a lock's losers, and so would workers whose loops had yet
    to add the listener: the model takes the holder and says it is assumed, and why."""
    each = {"listeners": 1, "workers": [[0], [], [], []], "held": [[0]] * 4}
    settled = attached_queues(attached(each, rows=1))
    assert settled is not None and settled.discipline == "holder" and not settled.assumed, settled
    young = attached_queues(attached({**each, "young": [1, 2, 3]}, rows=1))
    assert young is not None and young.discipline == "holder" and young.assumed, young
    assert "3 of those others were under 5 s old, waiting in epoll" in young.said, young.said
    one = attached_queues(attached({**each, "young": [2]}, rows=1))  # one of the three (latency --attach read "were")
    assert one is not None and "; 1 of those others was under 5 s old" in one.said, one.said
    odd = attached_queues(attached({**each, "young": [7]}, rows=1))  # names no worker: not taken
    assert odd is not None and not odd.assumed, odd


LATE = """import select, sys
fd = int(sys.argv[1])
loop = select.epoll()
loop.register(sys.stdin.fileno(), select.EPOLLIN)
print("ready", flush=True)
loop.poll()  # asleep in its event loop, the listener not yet added: an asyncio server starting its app
sys.stdin.readline()
loop.unregister(sys.stdin.fileno())
loop.register(fd, select.EPOLLIN)
print("added", flush=True)
loop.poll()
"""


@pytest.mark.parametrize("adds", [True, False])
def test_young_workers_are_read_again_as_the_run_ends(adds: bool) -> None:
    """A young worker asleep in its epoll watching none reads as a lock's loser at the start; read again at the end
    (read_again), one whose loop added the listener meanwhile watches it (the model: one shared queue, not the
    holder, said as read again), and a loser still watches none (the holder, settled: no longer assumed). The
    witness of each worker's epoll: its fdinfo."""
    listener = socket.create_server(("127.0.0.1", 0))
    inode, fd = os.fstat(listener.fileno()).st_ino, listener.fileno()
    with listener, pythons((WORKER, str(fd), "holder"), (LATE, str(fd)), pass_fds=(fd,)) as workers:
        assert all(w.stdout is not None and w.stdout.readline() == "ready\n" for w in workers)
        pids = [w.pid for w in workers]
        wait_for(lambda: [_wchan(pid) for pid in pids], lambda w: all("epoll" in c for c in w), START_TIMEOUT_S, "")
        found = attached_epolls.watched(pids, {inode})
        assert found["listeners_watched"]["young"] == [1], found
        late = workers[1]
        if adds:
            assert late.stdin is not None and late.stdout is not None
            late.stdin.write("go\n")
            late.stdin.flush()
            assert late.stdout.readline() == "added\n"
        assert [bool(_epoll_watches(pid, {inode})) for pid in pids] == [True, adds]  # the witness
        again = attached_epolls.read_again(found, pids, {inode})["listeners_watched"]
        assert again["at_end"] == [[0], [0] if adds else []], again


def test_a_mutex_read_again_at_the_end_settles_the_young() -> None:
    """The model of an attached run whose young workers watched none as it started: every worker watching the
    listener at the end is one shared queue (their loops were starting); some still watching none, the holder, no
    longer assumed; a reading at the end that names no listener is not taken."""
    each = {"listeners": 1, "workers": [[0], [], [], []], "held": [[0]] * 4, "young": [1, 2, 3]}
    started = attached_queues(attached({**each, "at_end": [[0]] * 4}, rows=1))
    assert started is not None and started.discipline == "shared" and not started.assumed, started
    assert "read again as the run ended: the 3 that watched none as it started" in started.said, started.said
    losers = attached_queues(attached({**each, "at_end": [[], [0], [], []]}, rows=1))
    assert losers is not None and losers.discipline == "holder" and not losers.assumed, losers
    assert "3 of its 4 still watched none as the run ended: lock losers, not event" in losers.said, losers.said
    short = attached_queues(attached({**each, "at_end": [[0]] * 3}, rows=1))  # not one a worker: not taken
    assert short is not None and short.discipline == "holder" and short.assumed, short
