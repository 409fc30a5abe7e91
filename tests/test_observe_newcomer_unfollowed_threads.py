"""observe does not say a newcomer accepted 0 connections where its accepting threads were not counted.

The accept watch follows a newcomer by its threads' names: the program's (its command name) and those its kind names
as the listener's (Puma's 'puma srv'). A server whose accepting threads carry names of their own (a Java or Tokio
server's pool, an unknown program's renamed threads) started a newcomer whose accepts the kernel never counted, yet
the note read 'which accepted 0 connections while observed (the kernel's count, its own)': by its replies it had
served every request since it started. Where a newcomer found holding the listener as the window ends has no thread
of a followed name, its accepts are now said not counted, as before the watch followed names.

The server is this test's own Python: a master holding the listener, a worker (its child) accepting on its main
thread, and, on a line to the master, a newcomer (its child too) whose accepting thread is named 'acceptor' while the
worker stops accepting. The witness is the replies: each names the pid that served it."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
from collections import Counter

from cluster import dies_with
from conftest import wait_for
from observed_under import observed_under

TIMEOUT_S = 20.0
REQUESTS = 10
SERVER = textwrap.dedent(
    """
    import ctypes, os, socket, sys, threading
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(name=None):
        if name:
            ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: this thread's own name
        while True:
            connection = listener.accept()[0]
            connection.sendall(b"pid %d" % os.getpid())
            connection.close()
            if stop.is_set() and not name:
                return

    def fork(name):
        pid = os.fork()
        if pid == 0:
            if name:  # the newcomer: its main thread waits, a thread of its own name accepts
                threading.Thread(target=serve, args=(name,), daemon=True).start()
                threading.Event().wait()
            serve()  # the worker, on its main thread; it stops accepting once told (SIGUSR1), and waits
            threading.Event().wait()
        return pid

    import signal
    signal.signal(signal.SIGUSR1, lambda *_: stop.set())
    worker = fork(None)
    print(listener.getsockname()[1], worker, flush=True)
    for line in sys.stdin:
        os.kill(worker, signal.SIGUSR1)
        print(fork("acceptor"), flush=True)
    """
)


def ask(port: int) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        return int(connection.recv(100).split()[1])


def test_a_newcomer_whose_threads_were_not_followed_is_not_said_to_accept_none() -> None:
    master = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=dies_with(os.getpid()),
    )
    served: Counter[int] = Counter()
    news: list[int] = []
    try:
        assert master.stdin is not None and master.stdout is not None
        port, worker = map(int, master.stdout.readline().split())
        stdin, stdout = master.stdin, master.stdout

        def drive() -> None:
            for _ in range(REQUESTS):
                served[ask(port)] += 1
            stdin.write("fork\n")
            stdin.flush()
            news.append(int(stdout.readline()))
            # the worker takes one more (its accept was waiting) and stops: then only the newcomer answers
            wait_for(lambda: ask(port), lambda pid: pid == news[0], TIMEOUT_S, "the newcomer answering")
            for _ in range(REQUESTS):
                served[ask(port)] += 1

        result = observed_under(drive, port=port)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(master.pid, 9)
        master.wait(TIMEOUT_S)
        for stream in (master.stdin, master.stdout):
            if stream is not None:
                stream.close()
    assert result.master == master.pid and result.workers[0].pid == worker, result
    assert served[news[0]] == REQUESTS, served  # the newcomer served, as its replies say
    reload = result.reloaded
    assert reload is not None and reload.pids == (news[0],), (reload, result.notes)
    assert reload.accepts == (), reload  # not counted: its accepting thread is named 'acceptor', not followed
    said = [note for note in result.notes if note.startswith(f"python3 started pid {news[0]}")]
    assert said and "whose accepts are not counted here" in said[0], result.notes
    assert "accepted 0 connections" not in said[0], said
