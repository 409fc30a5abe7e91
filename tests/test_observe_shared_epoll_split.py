"""observe splits a threaded server's connections by thread only where its threads can each poll an epoll of their
own. A server this tool does not know is taken per thread, and the split read the thread seen waiting in an epoll as
the one serving all it watches: by hand, a Go net/http server (GOMAXPROCS=4: 10 threads, one netpoller epoll, 12 kept
connections) had one thread in epoll_pwait and the verdict said that thread served all 12, where any thread serves
any of them. Where the process holds fewer epolls than the threads taken as workers, there is now no split, and the
verdict says why.

The server here is Go's shape in a few lines of Python: one thread polls the only epoll and hands each ready
connection to a pool of threads that wait on a queue (a futex), which answer it, each reply naming the thread that
served it. The witness is the replies: the connections are served by the pool's threads, not by the poller."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from cluster import dies_with
from conftest import wait_for

from accept_order.experiments.observe.server import find_server
from accept_order.experiments.observe.thread_split import ThreadSplit
from accept_order.servers.launched.base import free_port

KEPT = 6
POOL = 3
SERVER = textwrap.dedent(
    """
    import queue, select, socket, sys, threading
    listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
    listener.setblocking(False)
    poller, ready = select.epoll(), queue.Queue()
    poller.register(listener, select.EPOLLIN)
    open_ = {}

    def serve():
        while True:
            conn = ready.get()  # a futex: the pool's threads never wait in the epoll
            if conn.recv(65536):
                body = f"served by {threading.get_native_id()}\\n".encode()
                conn.sendall(b"HTTP/1.1 200 OK\\r\\ncontent-length: %d\\r\\n\\r\\n%s" % (len(body), body))
                poller.modify(conn, select.EPOLLIN | select.EPOLLONESHOT)
            else:
                poller.unregister(conn)
                conn.close()

    for _ in range(int(sys.argv[2])):
        threading.Thread(target=serve, daemon=True).start()
    print(threading.get_native_id(), flush=True)
    while True:
        for fd, _ in poller.poll():
            if fd == listener.fileno():
                conn, _ = listener.accept()
                open_[conn.fileno()] = conn
                poller.register(conn, select.EPOLLIN | select.EPOLLONESHOT)
            else:
                ready.put(open_[fd])
    """
)


def test_threads_that_share_one_epoll_are_not_split(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    script = tmp_path / "one_epoll.py"
    script.write_text(SERVER)
    server = subprocess.Popen(  # killed by the kernel if pytest is, even by SIGKILL
        [sys.executable, str(script), str(port), str(POOL)],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=dies_with(os.getpid()),
    )
    connections: list[http.client.HTTPConnection] = []
    try:
        assert server.stdout is not None
        poller = int(server.stdout.readline())
        connections = [http.client.HTTPConnection("127.0.0.1", port, timeout=10) for _ in range(KEPT)]
        served = set()
        for connection in connections:
            connection.request("GET", "/")
            served.add(int(connection.getresponse().read().split()[2]))
        assert served and poller not in served  # the pool's threads serve them: the poller only polls
        watched = find_server(server.pid, None)
        assert watched.threaded and len(watched.units) >= 2, watched.units
        # the poller back in its epoll with every kept connection registered, the pool in its queue
        wait_for(
            lambda: Path(f"/proc/{server.pid}/task/{poller}/syscall").read_text().split()[0],
            lambda call: call != "running",
            30,
            "the poller to wait",
        )
        split = ThreadSplit(watched)
        split.look(last=True)
        assert split.why is not None and "hold 1 epoll between them" in split.why, (split.why, split.held)
        assert split.looks == 0  # no look taken: none would be true
    finally:
        for connection in connections:
            connection.close()
        server.kill()
        server.wait(10)
