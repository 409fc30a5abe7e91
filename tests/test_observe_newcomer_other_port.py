"""Which process observe's newcomers.py takes for the server's newcomer, read as its accept watch names it.

The watch follows the server's program by name (accept_watch's comms), so it names other processes of that name too;
each is read once. The server's: started after the workers were chosen, in their namespace, and holding one of the
server's listeners, or holding no listener at all and taking over from the workers (a soft-stopped HAProxy read
after it closed its listeners: tests/test_observe_haproxy_sf_soft_stopped.py). A process that listens on other ports
only is another server, even one a worker started (an app's own helper server): taken for a newcomer, its accepts
would be credited to a reload that never was.

Here this test's process is the one worker, and its children the processes named: the kernel's own tables (their
fd tables, the namespace's listeners) are what each holds."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from cluster import dies_with

from accept_order.experiments.observe.newcomers import Newcomers
from accept_order.experiments.observe.reloaded import boot_clock, netns_of
from accept_order.experiments.observe.server import Unit, Watched
from accept_order.probes.accept_watch import ThreadCounts

# each child says 'ready' once it holds what it should, then waits for its stdin to close
READY = "print('ready', flush=True); sys.stdin.read()"
LISTENS_ELSEWHERE = f"import socket, sys; s = socket.create_server(('127.0.0.1', 0)); {READY}"
LISTENS_NOWHERE = f"import socket, sys; socket.create_server(('127.0.0.1', 0)).close(); {READY}"
HOLDS_OURS = f"import socket, sys; s = socket.socket(fileno=int(sys.argv[1])); {READY}"


@contextmanager
def child(code: str, listener: socket.socket | None = None) -> Iterator[int]:
    """A python3 child of this process running `code` (given `listener`, its descriptor the argument): its pid once
    it is ready."""
    fds = (listener.fileno(),) if listener is not None else ()
    process = subprocess.Popen(
        [sys.executable, "-c", code, *map(str, fds)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        pass_fds=fds,
        preexec_fn=dies_with(os.getpid()),
    )
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n", process.poll()
        yield process.pid
    finally:
        process.kill()
        process.wait(10)
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()


def test_a_child_listening_elsewhere_is_no_newcomer_one_listening_nowhere_or_on_ours_is() -> None:
    ours = socket.create_server(("127.0.0.1", 0))
    port = ours.getsockname()[1]
    me = os.getpid()
    watched = Watched(f"port {port}", "python3", None, (me,), (Unit(me),), (port,), (), me)
    # chosen now: the children start after (their start is read in 10 ms ticks, rounded down: a tick earlier)
    newcomers = Newcomers(watched, netns_of(me), boot_clock() - 0.01)
    try:
        with (
            child(LISTENS_ELSEWHERE) as elsewhere,
            child(LISTENS_NOWHERE) as nowhere,
            child(HOLDS_OURS, ours) as holding,
        ):
            newcomers.look(ThreadCounts({(pid, pid): 1 for pid in (elsewhere, nowhere, holding)}))
            assert set(newcomers.found) == {nowhere, holding}, (newcomers.found, elsewhere, nowhere, holding)
            assert newcomers.over == {nowhere: True, holding: True}, newcomers.over  # each a child of the worker
            assert not newcomers.unread, newcomers.unread
    finally:
        ours.close()
