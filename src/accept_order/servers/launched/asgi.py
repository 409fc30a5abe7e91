"""What the tool's ASGI servers (uvicorn, granian) share: the app they serve, written into the private
directory, and how the tool tells that each worker waits for connections.

The app is a file of the run's private directory, not a module of this package, so that the server imports
exactly what it is shown (`--app-dir`/`--working-dir` the directory) and the run's settings are constants
in it: it burns the run's work, appends `PID CLIENT_PORT` to `access.log` (one write(2) on an O_APPEND
descriptor: whole lines however many workers write), then answers `worker PID`. The line is written before
the reply, so every reply a client got is in the log when the server stops: the witness a run is checked
against.

Both servers' workers wait in an event loop (asyncio's selector, libuv, tokio's reactor) whose epoll
watches the listening socket; a worker that has spawned, even one asleep, may not have registered it yet.
Ready, then, is every worker's epoll watching a listener on the port (its fdinfo), not just every worker
asleep. Neither takes a list of CPUs: --cpus pins every thread of each worker from here.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ...core.spec import ServerSpec
from .base import LaunchedServer

# psutil and the fd tables (ctypes) are imported where a running server uses them: `modes` and `inspect`
# import every kind's module
if TYPE_CHECKING:
    import psutil

APP_MODULE = "accept_order_asgi_app"  # the file the app is written to, without .py; `MODULE:app` names it
LOG = "access.log"

APP_TEMPLATE = '''"""Written by accept-order for one run, removed when it ends: the run's work, a line in the
request log (`PID CLIENT_PORT`, before the reply), then `worker PID`."""

import os

from accept_order.probes.work import spin

WORK_US = {work_us}
WORK_ITERS = {work_iters}
LOG = os.open({log!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
{nodelay}


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({{"type": "lifespan.startup.complete"}})
            elif message["type"] == "lifespan.shutdown":
                await send({{"type": "lifespan.shutdown.complete"}})
                return
    if scope["type"] != "http":
        return
    spin(WORK_US, WORK_ITERS)
    pid = os.getpid()
    client = scope.get("client") or ("", 0)
    os.write(LOG, f"{{pid}} {{client[1]}}\\n".encode())
    body = f"worker {{pid}}\\n".encode()
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]
    await send({{"type": "http.response.start", "status": 200, "headers": headers}})
    await send({{"type": "http.response.body", "body": body}})
'''


# Where the server's loop leaves Nagle's algorithm on for the connections it accepts (uvicorn's asyncio: see
# uvicorn.py), the app turns it off on the port's listening socket as its worker imports it, before the loop
# listens and accepts: Linux's accepted sockets inherit TCP_NODELAY from their listener, and the listener is
# the one socket every worker shares, so each connection of the run is accepted with it.
NODELAY_TEMPLATE = """
import socket
import stat


def _listener(sock, port):
    \"\"\"Whether `sock` is a TCP socket bound to `port` and connected to nothing.\"\"\"
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
        return False
    try:
        if sock.getsockname()[1] != port:
            return False
    except OSError:
        return False
    try:
        sock.getpeername()
    except OSError:
        return True  # connected to nothing
    return False


def _nodelay_on_listener(port):
    for name in os.listdir("/proc/self/fd"):
        try:
            if not stat.S_ISSOCK(os.fstat(int(name)).st_mode):
                continue
            sock = socket.socket(fileno=os.dup(int(name)))
        except OSError:
            continue  # the listing's own descriptor, closed by now
        with sock:  # a duplicate: the option is the socket's, the descriptor closed here is ours
            if _listener(sock, port):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


_nodelay_on_listener({port})
"""


def write_app(spec: ServerSpec, directory: str, nodelay_port: int | None = None) -> str:
    """Write the app into `directory`; return its `MODULE:app` target. `nodelay_port`: the port whose
    listening socket the app gives TCP_NODELAY as it is imported (see NODELAY_TEMPLATE)."""
    nodelay = NODELAY_TEMPLATE.format(port=nodelay_port) if nodelay_port is not None else ""
    log = os.path.join(directory, LOG)
    source = APP_TEMPLATE.format(work_us=spec.work_us, work_iters=spec.work_iters, log=log, nodelay=nodelay)
    with open(os.path.join(directory, f"{APP_MODULE}.py"), "w") as f:
        f.write(source)
    return f"{APP_MODULE}:app"


def watching(pids: list[int], port: int) -> bool:
    """Every pid has an epoll that watches a socket listening on `port` (its event loop waits for it)."""
    from ...probes.fd_table import open_files
    from ...probes.listeners import listening_sockets

    try:
        listeners = {row.inode for row in listening_sockets(port)}
    except OSError:
        return False
    for pid in pids:
        try:
            files = open_files(pid).values()
        except OSError:
            return False
        if not any(watch.inode in listeners for f in files for watch in f.watches):
            return False
    return True


def pin_threads(pids: list[int], cpus: tuple[int, ...]) -> None:
    """Worker i, every thread of it, on cpus[i % len(cpus)] (like nginx's worker_cpu_affinity); neither
    server takes a CPU list of its own. A thread started later inherits its starter's affinity."""
    for index, pid in enumerate(pids):
        cpu = {cpus[index % len(cpus)]}
        try:
            tids = [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue  # gone: check_alive says so
        for tid in tids:
            try:
                os.sched_setaffinity(tid, cpu)
            except OSError:
                pass  # a thread that just ended


class AsgiServer(LaunchedServer):
    """A launched ASGI server: a master whose children are its workers (not multiprocessing's resource
    tracker, which a spawn start method adds), serving the app above."""

    def app(self) -> str:
        """Write the app into the private directory; its `MODULE:app` target."""
        return write_app(self.spec, self.directory)

    def workers_of(self, master: psutil.Process) -> list[int]:
        import psutil

        from ...probes.children import children

        workers = []
        for child in sorted(children(master), key=lambda p: (p.create_time(), p.pid)):
            try:
                if "resource_tracker" not in " ".join(child.cmdline()):
                    workers.append(child.pid)
            except psutil.NoSuchProcess:
                continue
        return workers

    def ready(self) -> bool:
        """Every worker's event loop watches a listener (a worker asleep may still be starting)."""
        import psutil

        if self.master is None:
            return False
        try:
            workers = self.workers_of(psutil.Process(self.master.pid))
        except psutil.Error:
            return True  # start() reports the exit
        return watching(workers, self.port)

    def start(self) -> None:
        super().start()
        if self.spec.cpus:
            pin_threads(self._pids, self.spec.cpus)
