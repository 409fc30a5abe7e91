"""lighttpd (Debian's 1.4), launched by the tool: `server.max-worker N` forked workers on one socket.

The master binds the listener, forks N workers and stays as their watcher (it restarts one that dies);
each worker is a single-threaded event loop that inherits the socket. What /proc shows here (Linux 6.18,
lighttpd 1.4.69): every worker's own epoll watches the listener without EPOLLEXCLUSIVE (`events: 19`) and
it sleeps in epoll_wait: one connection wakes every idle worker, a thundering herd. With
`server.event-handler = "poll"` each worker sleeps in poll() on it instead: the same herd.

mod_magnet (Debian's lighttpd-modules-lua) runs a Lua handler that answers `worker PID` and puts the pid and
the client's port in the request's environment, which the access log writes (`%{AO_PID}e %{AO_PORT}e`):
the witness. lighttpd buffers its access log per worker and writes it out in chunks (at the latest when it
stops), so lines of different workers are not in request order: each carries the time the request began
(`%{usec}t`), and the witness is sorted by it.

Stopping: SIGTERM once every worker is back in its wait; the master signals its process group and exits
without reaping the workers, so their zombies are left to init (reaper.end_group does not wait for those).
"""

from __future__ import annotations

import os
import signal
from typing import TYPE_CHECKING

from ...core.errors import PlanError, ServerUnavailable
from ...core.kinds import IDLE_CLOSE, ModeInfo, ServerKind, redraws
from ...core.models import Mechanism
from ...core.processes import STOP_TIMEOUT_S
from ...core.spec import ServerSpec
from ...core.waiting import wait_for
from ..watched import gone
from .base import SETTLE_TIMEOUT_S, LaunchedServer
from .installed import installed

# psutil is imported where a running server uses it: `modes` and `inspect` import every kind
if TYPE_CHECKING:
    import psutil

    from ...core.cures import LongLivedCure
    from ...core.target import Target

PACKAGES = "apt-get install lighttpd lighttpd-modules-lua"
MODULE_DIR = "/usr/lib/lighttpd"
MODULES = ("mod_magnet.so", "mod_accesslog.so")

# A worker accepts until EAGAIN (or its own connection limit) per wakeup, which no setting changes; then it
# reads the request, which sleeps: its context switches are not wakeups.
# lighttpd accepts at most this many connections per readiness event of its listener (network.c's 'accept()s at
# most 100 new connections per fdevent'): bpftrace saw 250 queued taken in wakeups of 100, 100 and 50 (the queueing
# model's batch: 1 was one connection a wakeup)
ACCEPTS_PER_EVENT = 100
LIGHTTPD_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        ModeInfo(
            "max-worker",
            "server.max-worker N: forked workers on the master's one socket, each in an epoll of its own",
            "every lighttpd worker inherits the master's listening socket and waits for it in epoll_wait on an "
            "epoll of its own that watches it without EPOLLEXCLUSIVE: one connection wakes every idle worker (a "
            "thundering herd), and whoever accepts first serves it",
            None,
            "shared",
            herds=True,
            batches=False,
            own_batch=ACCEPTS_PER_EVENT,
            settings=("server.max-worker = N", 'server.event-handler = "linux-sysepoll"'),
            seen_as=Mechanism.EPOLL_HERD,
        ),
        ModeInfo(
            "poll",
            'server.max-worker N with server.event-handler = "poll": each worker waits in poll() on the socket',
            "every lighttpd worker waits for the shared listening socket in poll(), which puts a non-exclusive "
            "wait entry on it for each: one connection wakes every idle worker (a thundering herd)",
            None,
            "shared",
            herds=True,
            batches=False,
            own_batch=ACCEPTS_PER_EVENT,
            settings=("server.max-worker = N", 'server.event-handler = "poll"'),
            seen_as=Mechanism.POLL,
        ),
    )
}
EVENT_HANDLERS = {"max-worker": "linux-sysepoll", "poll": "poll"}


def lighttpd_binary() -> str:
    """The lighttpd executable with the modules the tool needs, or ServerUnavailable naming the packages."""
    path = installed("lighttpd")
    if path is None:
        raise ServerUnavailable(f"lighttpd is not installed here: {PACKAGES}")
    missing = [m for m in MODULES if not os.path.exists(os.path.join(MODULE_DIR, m))]
    if missing:
        raise ServerUnavailable(f"lighttpd's modules are missing ({', '.join(missing)}): {PACKAGES}")
    return path


def lighttpd_missing() -> str | None:
    try:
        lighttpd_binary()
    except ServerUnavailable as exc:
        return str(exc)
    return None


def handler_lua(work_us: int, work_iters: int) -> str:
    """mod_magnet's script, run for each request: the work (os.clock() is this single-threaded worker's CPU),
    then `worker PID`, with the pid and the client's port left for the access log."""
    return f"""-- written by accept-order for one run; removed when it ends
local f = io.open("/proc/self/stat")
local pid = f:read("*n")
f:close()
local i = 0
for _ = 1, {work_iters} do i = i + 1 end
if {work_us} > 0 then
    local stop = os.clock() + {work_us / 1e6!r}
    while os.clock() < stop do i = i + 1 end
end
lighty.r.req_env["AO_PID"] = tostring(pid)
lighty.r.req_env["AO_PORT"] = lighty.r.req_attr["request.remote-port"]
lighty.r.resp_header["Content-Type"] = "text/plain"
lighty.r.resp_body:set({{"worker " .. pid .. "\\n"}})
return 200
"""


# Kept connections (ServerSpec.keepalive): lighttpd's limits on a connection's life lifted as far as they go;
# the client closes them. Its request limit is 16 bits (65536 wrapped to 0 here, which turns keep-alive off):
# a connection kept past 65535 requests is closed by lighttpd. The idle limit is in seconds.
KEEPALIVE = "server.max-keep-alive-requests = 65535\nserver.max-keep-alive-idle = 86400\n"


def render_config(spec: ServerSpec, mode: ModeInfo, port: int, directory: str) -> str:
    """lighttpd.conf for one run; every path in `directory` (lighttpd's strings are double-quoted)."""
    return f"""# written by accept-order for one run; removed when it ends
server.document-root = "{directory}"
server.bind = "{f"[{spec.host}]" if ":" in spec.host else spec.host}"
server.port = {port}
server.max-worker = {spec.workers}
server.event-handler = "{EVENT_HANDLERS[mode.name]}"
server.listen-backlog = {spec.backlog}
server.pid-file = "{directory}/lighttpd.pid"
server.errorlog = "{directory}/error.log"
server.modules = ("mod_magnet", "mod_accesslog")
magnet.attract-raw-url-to = ("{directory}/handler.lua")
accesslog.filename = "{directory}/access.log"
accesslog.format = "%{{AO_PID}}e %{{AO_PORT}}e %{{usec}}t %m %k"
{KEEPALIVE if spec.keepalive else ""}"""


class LighttpdServer(LaunchedServer):
    name = "lighttpd"
    graceful = signal.SIGTERM  # sent once every worker is back in its wait (close()); lighttpd flushes its log
    error_logs = ("stderr.log", "error.log")
    error_marks = ("can't", "failed", "error", "Error", "unknown")
    shortage_marks = ("Too many open files", "connection limit")
    witness_source = "lighttpd access log"  # `%{AO_PID}e %{AO_PORT}e %{usec}t %m %k`, sorted by the time
    numbered_by = "%k"  # keep-alive requests before this one on its connection (the witness adds 1)

    def __init__(self, spec: ServerSpec) -> None:
        super().__init__(spec)
        self.mode = LIGHTTPD_MODES[spec.mode]

    def command(self) -> list[str]:
        binary = lighttpd_binary()
        conf = os.path.join(self.directory, "lighttpd.conf")
        with open(conf, "w") as f:
            f.write(render_config(self.spec, self.mode, self.port, self.directory))
        with open(os.path.join(self.directory, "handler.lua"), "w") as f:
            f.write(handler_lua(self.spec.work_us, self.spec.work_iters))
        return [binary, "-D", "-f", conf]  # -D: in the foreground, as our child

    def workers_of(self, master: psutil.Process) -> list[int]:
        """The forked workers; with one worker lighttpd forks none and the master serves (server.c forks
        only for max-worker above 1)."""
        return [master.pid] if self.spec.workers == 1 else super().workers_of(master)

    def waiting(self, pid: int) -> bool:
        from ...probes.proc_waits import EPOLL_WAITS, POLLS, thread_wait  # not at the top: `inspect` imports every kind

        wait = thread_wait(pid, pid)
        return wait.call in (EPOLL_WAITS | POLLS)

    def ready(self) -> bool:
        """The pid file, the listener, and every worker in its wait (not just asleep: in the wait)."""
        import psutil

        if self.master is None or not os.path.exists(os.path.join(self.directory, "lighttpd.pid")):
            return False
        try:
            workers = self.workers_of(psutil.Process(self.master.pid))
        except psutil.Error:
            return True  # start() reports the exit
        return all(self.waiting(pid) for pid in workers) and self.listening(1)

    def start(self) -> None:
        super().start()
        if self.spec.cpus:  # lighttpd has no affinity setting: pin the workers from here, in index order
            for index, pid in enumerate(self._pids):
                os.sched_setaffinity(pid, {self.spec.cpus[index % len(self.spec.cpus)]})

    def read_logs(self) -> None:
        """The access log in request order: by the time each request began (the lines are not)."""
        rows: list[tuple[int, ...]] = []
        try:
            with open(os.path.join(self.directory, self.request_log)) as f:
                for line in f:
                    fields = line.split()
                    if len(fields) in (4, 5) and all(x.isdigit() for x in fields[:3]):
                        # %k: the requests before this one on its connection (0 for its first)
                        number = (int(fields[4]) + 1,) if len(fields) == 5 and fields[4].isdigit() else ()
                        rows.append((int(fields[2]), int(fields[0]), int(fields[1]), *number))
        except OSError:
            rows = []
        self._log = [row[1:] for row in sorted(rows)]
        self._shortages = self.shortages()

    def close(self) -> None:
        """SIGTERM once every worker is back in its wait (each request it served is then logged), then wait for
        the workers to exit: the master signals them and exits at once, and the base class's ladder SIGKILLs a
        worker it finds alive after its master, which would lose the log lines it holds in its buffer."""
        master = self.master
        if master is not None and master.poll() is None and self._pids:
            wait_for(lambda: all(self.waiting(pid) for pid in self._pids), SETTLE_TIMEOUT_S)
            master.send_signal(self.graceful)
            wait_for(lambda: master.poll() is not None and all(gone(pid) for pid in self._pids), STOP_TIMEOUT_S)
        super().close()


class LighttpdKind(ServerKind):
    name = "lighttpd"
    connections_at_once = "many"  # an event loop a worker
    process_names = ("lighttpd",)
    serves_on_one_thread = True
    summary = "Debian's lighttpd with server.max-worker forked workers and a mod_magnet handler"
    witness = LighttpdServer.witness_source
    preferred_mode = "max-worker"

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import ClientLimit, IdleLimit, LongLivedCure

        return (
            LongLivedCure(
                "server.max-keep-alive-requests = 100",
                redraws("lighttpd closes a connection after this many requests on it"),
                ClientLimit(
                    "server.max-keep-alive-requests",
                    launched="server.max-keep-alive-requests = 65535 under a kept load (its most)",
                ),
            ),
            LongLivedCure("server.max-keep-alive-idle = 5", IDLE_CLOSE, IdleLimit("server.max-keep-alive-idle")),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return LIGHTTPD_MODES

    def missing(self) -> str | None:
        return lighttpd_missing()

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.accept_batch not in (0, 1):
            raise PlanError("--accept-batch does not apply to lighttpd: it has no setting for it")

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return LighttpdServer(spec)
