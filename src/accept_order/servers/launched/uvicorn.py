"""uvicorn (PyPI), launched by the tool with `--workers N`: a supervisor and N spawned worker processes.

The supervisor binds the one listening socket and hands it to each worker it starts with multiprocessing's
spawn (a fresh interpreter each, so a resource tracker process is its child too: not a worker). Each worker
runs an event loop whose epoll, the worker's own, watches that socket without EPOLLEXCLUSIVE (read from
/proc on Linux 6.18): one connection wakes every idle worker, and on its wakeup a worker accepts until
EAGAIN. The modes are the two loops: asyncio's (uvicorn's own default without extras) and uvloop (libuv,
what `uvicorn[standard]` runs); `--loop` is always given so that what runs does not depend on whether
uvloop happens to be installed, and `--http h11` so that the loop is the only difference. The supervisor
pings each worker over a pipe every half second (a thread of the worker answers) and restarts one that
does not answer.

The app (asgi.py) answers `worker PID` and logs `PID CLIENT_PORT` per request: the witness. SIGTERM is
uvicorn's graceful stop (the supervisor passes it on and waits for its workers).

Nagle's algorithm is turned off on the listening socket (TCP_NODELAY, by the app as each worker imports it;
Linux's accepted sockets inherit it). asyncio sets TCP_NODELAY only on sockets made with IPPROTO_TCP, and
the socket uvicorn's supervisor binds for --workers is made with protocol 0, so the connections asyncio
accepted kept Nagle on; h11 writes a reply's headers and its body in two writes, and on a kept connection
the body waited for the client's delayed ACK of the headers: 40 ms a request (`latency --pool -c 8`: p50
44.0 ms under asyncio, 3.7 ms with TCP_NODELAY; uvloop sets it on every TCP socket itself: 4-7 ms). That
was the kernel's timer, not the loop, and a `--modes asyncio,uvloop` comparison credited the loop with it;
a single-process `uvicorn app` (asyncio's own socket) has TCP_NODELAY as well. Neither the mechanism (one
socket, a herd) nor the loops change: both serve connections without Nagle. A user's own `uvicorn --workers N
--loop asyncio` (0.54 here) still stalls so: upstream's issue Kludex/uvicorn#3149 (open; fixes proposed in
#3154/#3155 make the bound socket IPPROTO_TCP): each report of a run says so (UvicornKind.launch_note).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ...core.errors import PlanError, ServerUnavailable
from ...core.hints import pip_install
from ...core.kinds import BY_HASH, IDLE_CLOSE, ModeInfo, ServerKind
from ...core.models import Mechanism
from ...core.processes import STOP_TIMEOUT_S
from ...core.spec import ServerSpec
from .asgi import AsgiServer, write_app

if TYPE_CHECKING:
    import psutil

    from ...core.cures import LongLivedCure
    from ...core.target import Target

PACKAGE = pip_install("servers", "uvicorn")
UVLOOP = pip_install("servers", "uvloop")

# asyncio accepts until EAGAIN on each wakeup (up to the backlog), uvloop one connection a wakeup (bpftrace:
# 100 queued, 100 wakeups of one accept4() each, none EAGAIN; uvloop 0.23); then each reads the request, which
# sleeps: no batch of ours applies, and its context switches are not wakeups.
UVICORN_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        ModeInfo(
            "asyncio",
            "--workers N --loop asyncio: the supervisor's one socket; each worker's asyncio loop waits in an epoll",
            "every uvicorn worker is handed the supervisor's listening socket and waits for it in an asyncio loop "
            "whose epoll watches it without EPOLLEXCLUSIVE: one connection wakes every idle worker (a thundering "
            "herd), and whoever accepts first serves it, accepting until EAGAIN",
            None,
            "shared",
            herds=True,
            batches=False,
            own_batch=0,  # until EAGAIN (the model's batch): 100 queued taken in 2 wakeups, 79 and 21
            settings=("--workers N", "--loop asyncio"),
            seen_as=Mechanism.EPOLL_HERD,
        ),
        ModeInfo(
            "uvloop",
            "--workers N --loop uvloop (uvicorn[standard]'s loop): the same one socket; libuv's epoll in each worker",
            "every uvicorn worker is handed the supervisor's listening socket and waits for it in uvloop (libuv), "
            "whose epoll watches it without EPOLLEXCLUSIVE: one connection wakes every idle worker (a thundering "
            "herd), and whoever accepts first serves it, one connection per wakeup (libuv goes back to its epoll "
            "between two accepts)",
            None,
            "shared",
            herds=True,
            batches=False,
            settings=("--workers N", "--loop uvloop"),
            seen_as=Mechanism.EPOLL_HERD,
        ),
    )
}


def uvicorn_missing() -> str | None:
    """Why uvicorn cannot be launched here, or None."""
    from importlib.util import find_spec

    return None if find_spec("uvicorn") is not None else f"uvicorn is not installed: {PACKAGE}"


def uvloop_missing() -> str | None:
    """Why the uvloop mode cannot run here, or None."""
    from importlib.util import find_spec

    return None if find_spec("uvloop") is not None else f"uvloop is not installed: {UVLOOP}"


class UvicornServer(AsgiServer):
    name = "uvicorn"
    error_marks = ("ERROR", "Error")
    witness_source = "uvicorn app's request log"  # `PID CLIENT_PORT`, written by the app (asgi.py)

    def command(self) -> list[str]:
        missing = uvicorn_missing()
        if missing:
            raise ServerUnavailable(missing)
        target = write_app(self.spec, self.directory, nodelay_port=self.port)
        return [
            sys.executable, "-m", "uvicorn", target,
            "--app-dir", self.directory,
            "--host", self.spec.host,
            "--port", str(self.port),
            "--workers", str(self.spec.workers),
            "--backlog", str(self.spec.backlog),
            "--loop", self.spec.mode,
            "--http", "h11",
            "--no-access-log",
            "--timeout-graceful-shutdown", str(int(STOP_TIMEOUT_S)),
            # kept connections: no limit on their requests; idle ones closed after 5 s unless lifted past any run
            *(("--timeout-keep-alive", "86400") if self.spec.keepalive else ()),
        ]  # fmt: skip

    def workers_of(self, master: psutil.Process) -> list[int]:
        """The spawned workers; with --workers 1 uvicorn spawns none and serves in its own process (on a
        socket asyncio made itself, with TCP_NODELAY): that process is the worker. Without it, `serve --server
        uvicorn -w 1` waited for a child that never came ('not ready within 10 s')."""
        return [master.pid] if self.spec.workers == 1 else super().workers_of(master)


class UvicornKind(ServerKind):
    name = "uvicorn"
    connections_at_once = "many"  # asyncio's event loop
    process_names = ("uvicorn",)
    serves_on_one_thread = True
    summary = (
        "PyPI's uvicorn with --workers N (asyncio or uvloop, h11; TCP_NODELAY on its socket), serving an ASGI app "
        "written for the run"
    )
    witness = UvicornServer.witness_source
    preferred_mode = "asyncio"

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import IdleLimit, LongLivedCure

        return (
            LongLivedCure(
                "--timeout-keep-alive 5",
                f"{IDLE_CLOSE} (5 s by default; uvicorn has no limit on requests per connection, no socket per worker)",
                IdleLimit("--timeout-keep-alive"),
            ),
            # uvicorn alone has no socket per worker, so its only cure of a split pool is gunicorn's: 20 kept
            # connections (wrk -c20) went 0/5/0/15 over 'uvicorn --workers 4' (observe; ss -tnp during the load the
            # same), 6/2/5/7 in another run, and 4/8/5/3 over gunicorn 27's 4 UvicornWorkers with --reuse-port (4
            # listeners, ss -ltn), each its own SO_REUSEPORT socket
            LongLivedCure(
                "gunicorn -k uvicorn_worker.UvicornWorker --reuse-port",
                f"uvicorn's workers run under gunicorn 23+ (PyPI's uvicorn-worker; uvicorn.workers before it), "
                f"each opening its own SO_REUSEPORT socket: {BY_HASH}",
                "not measured: the tool runs uvicorn's own --workers; inspect and observe read such a server as "
                "gunicorn's",
            ),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return UVICORN_MODES

    def launch_note(self, spec: ServerSpec) -> str | None:
        """asyncio with --workers N only: uvloop sets TCP_NODELAY itself, and one worker serves on asyncio's own
        socket, which has it (see the module doc)."""
        if spec.mode != "asyncio" or spec.workers == 1:
            return None
        return (
            "this tool's uvicorn sets TCP_NODELAY on its listening socket; a user's `uvicorn --workers N --loop "
            "asyncio` has Nagle on (Kludex/uvicorn#3149), and a reply over a kept connection can wait 40 ms for "
            "the client's delayed ACK"
        )

    def missing(self) -> str | None:
        return uvicorn_missing()

    def unavailable(self, mode: str) -> str | None:
        return self.missing() or (uvloop_missing() if mode == "uvloop" else None)

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.accept_batch not in (0, 1):
            way = "asyncio accepts until EAGAIN" if spec.mode == "asyncio" else "uvloop accepts one per wakeup"
            raise PlanError(f"--accept-batch does not apply to uvicorn: {way}")

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return UvicornServer(spec)
