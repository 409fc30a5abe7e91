"""uWSGI (PyPI's pyuwsgi, 2.0), launched by the tool: a master and prefork workers serving HTTP themselves.

`--http-socket` makes each worker parse HTTP (not `--http`, which puts a router process in front). The
master binds the one listening socket before it forks, so every worker inherits it; what the modes change
is how the workers wait for it (read from /proc on Linux 6.18):

- default: each worker has an epoll of its own that watches the listener without EPOLLEXCLUSIVE (`events:
  19`) and sleeps in epoll_wait(maxevents=1): one connection wakes every idle worker, a thundering herd.
- thunder-lock: a process-shared robust priority-inheriting pthread mutex is held around the wait and the
  accept; the holder sleeps in epoll_wait, every other idle worker in futex(FUTEX_LOCK_PI) (wchan
  rt_mutex_schedule). An unlock hands the lock to the longest waiter, so idle workers take turns.
- reuse-port: SO_REUSEPORT is set on the master's one socket, and that is all: the workers still share it
  (one listener, one queue; uWSGI's own help says the option is for BSD), so it is the default's herd.

The app (uwsgi_app.py) answers `worker PID` and hands uWSGI's request log the client port; the log,
`accept-order-request %(pid) %(client_port)` per request, is the witness. Each worker writes its own line
(one writev to the stderr it inherited, stderr.log) after the reply and before it waits again. Not a
`req-logger`: that sends each line to the master over a socketpair, the master reads one per turn of its
loop, and after `q` it exits once the workers are reaped without reading what is still queued (uWSGI 2.0's
master.c: uwsgi_master_check_death comes before the event wait): a master the scheduler ran late lost 34
of 40 lines. Stopping: the master FIFO's `q` is uWSGI's graceful shutdown (SIGTERM with die-on-term and
SIGINT kill the workers at once; SIGTERM without die-on-term would reload them: new workers), after the
workers are back in their wait, so every request answered is logged by then. uWSGI's --cpu-affinity takes
a core count, not a list, so --cpus is applied from here once the workers exist.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import TYPE_CHECKING

from ...core.errors import PlanError, ServerUnavailable
from ...core.hints import pip_install
from ...core.kinds import CLOSES_EACH, LockFirst, ModeInfo, ServerKind
from ...core.models import Mechanism, Model
from ...core.spec import ServerSpec
from ...core.waiting import wait_for
from .base import LaunchedServer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...core.cures import LongLivedCure
    from ...core.target import Target
    from .uwsgi_config import Reading

PACKAGE = pip_install("servers", "pyuwsgi")
# x86_64 syscall numbers a worker waits in: epoll_wait, epoll_pwait, futex (the thunder lock)
EPOLL_WAIT, EPOLL_PWAIT, FUTEX = 232, 281, 202
WAITS = (EPOLL_WAIT, EPOLL_PWAIT, FUTEX)

# A worker accepts one connection per wakeup (epoll_wait with maxevents 1, then one accept) and then reads
# the request, which sleeps: no batches, and its context switches are not wakeups.
UWSGI_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        ModeInfo(
            "default",
            "uWSGI's default: the master's one socket, each prefork worker waits for it in an epoll of its own",
            "every uWSGI worker inherits the master's listening socket and waits for it in epoll_wait on an epoll "
            "of its own that watches it without EPOLLEXCLUSIVE: one connection wakes every idle worker (a "
            "thundering herd), and whoever accepts first serves it",
            None,
            "shared",
            herds=True,
            batches=False,
            settings=("thunder-lock = false", "reuse-port = false"),
            seen_as=Mechanism.EPOLL_HERD,
        ),
        ModeInfo(
            "thunder-lock",
            "--thunder-lock: a shared pthread mutex around the wait; one worker waits in epoll, the rest on the lock",
            "with --thunder-lock a worker must hold a process-shared priority-inheriting mutex to wait for the "
            "shared socket: the holder alone sleeps in epoll_wait, the other idle workers in FUTEX_LOCK_PI, and "
            "each unlock hands the lock to the longest waiter, so idle workers take turns (no herd)",
            Model.FIFO,
            "shared",
            batches=False,
            settings=("thunder-lock = true",),
            seen_as=Mechanism.ACCEPT_MUTEX,  # one worker in epoll_wait, the others in FUTEX_LOCK_PI: a lock decides
        ),
        ModeInfo(
            "reuse-port",
            "--reuse-port: SO_REUSEPORT on the master's one socket, which every worker still shares (a herd)",
            "uWSGI's --reuse-port sets SO_REUSEPORT on the one socket the master binds before forking, so the "
            "workers still share one listener and one queue: each waits for it in its own epoll without "
            "EPOLLEXCLUSIVE, and one connection wakes every idle worker (a thundering herd)",
            None,
            "shared",
            herds=True,
            batches=False,
            settings=("thunder-lock = false", "reuse-port = true"),  # with thunder-lock, the lock decides
            seen_as=Mechanism.EPOLL_HERD,  # SO_REUSEPORT on the one shared socket: /proc sees the default
        ),
    )
}


def uwsgi_missing() -> str | None:
    """Why uWSGI cannot be launched here, or None."""
    from importlib.util import find_spec

    return None if find_spec("pyuwsgi") is not None else f"pyuwsgi is not installed: {PACKAGE}"


REQUEST_MARK = "accept-order-request"  # starts each request line among uWSGI's own messages in stderr.log
GRACE_S = 10  # the most a graceful stop may take (a busy machine); an idle one takes milliseconds


def render_config(spec: ServerSpec, mode: ModeInfo, port: int, directory: str) -> str:
    """uwsgi.ini for one run; every path in `directory`."""
    address = f"[{spec.host}]" if ":" in spec.host else spec.host
    settings = "".join(f"{line}\n" for line in mode.settings)
    return f"""; written by accept-order for one run; removed when it ends
[uwsgi]
strict = true
master = true
processes = {spec.workers}
http-socket = {address}:{port}
listen = {spec.backlog}
{settings}module = accept_order.servers.launched.uwsgi_app:app
need-app = true
single-interpreter = true
; SIGTERM stops (without it, uWSGI reloads: new workers); workers die with a killed master
die-on-term = true
no-orphans = true
; `q` here is the graceful shutdown
master-fifo = {os.path.join(directory, "master.fifo")}
reload-mercy = {GRACE_S}
worker-reload-mercy = {GRACE_S}
pidfile = {os.path.join(directory, "uwsgi.pid")}
; no req-logger: each worker writes its request line to its stderr itself, none waits in the master
logformat = {REQUEST_MARK} %(pid) %(client_port)
"""


def wait_syscall(pid: int) -> int | None:
    """The syscall `pid` is blocked in (/proc/PID/syscall's first field), or None (running, or gone)."""
    try:
        with open(f"/proc/{pid}/syscall") as f:
            first = f.read().split(maxsplit=1)[0]
    except (OSError, IndexError):
        return None
    return int(first) if first.isdigit() else None


class UwsgiServer(LaunchedServer):
    name = "uwsgi"
    # the line that names the cause (a bind failure, an unknown option, the app's import error), not the
    # root warning every start prints
    error_marks = ("bind(", "unrecognized option", "unknown config directive", "Error", "error", "GAME OVER")
    witness_source = "uwsgi request log"  # `accept-order-request %(pid) %(client_port)`
    request_log = "stderr.log"  # the workers write it themselves (see the module's docstring)

    def __init__(self, spec: ServerSpec) -> None:
        super().__init__(spec)
        self.mode = UWSGI_MODES[spec.mode]

    def command(self) -> list[str]:
        missing = uwsgi_missing()
        if missing:
            raise ServerUnavailable(missing)
        ini = os.path.join(self.directory, "uwsgi.ini")
        with open(ini, "w") as f:
            f.write(render_config(self.spec, self.mode, self.port, self.directory))
        # pyuwsgi is uWSGI inside this Python: run() reads argv like the uwsgi binary
        return [sys.executable, "-c", "import sys, pyuwsgi; sys.exit(pyuwsgi.run())", "--ini", ini]

    def environment(self) -> dict[str, str]:
        return {
            "ACCEPT_ORDER_WORK_US": str(self.spec.work_us),
            "ACCEPT_ORDER_WORK_ITERS": str(self.spec.work_iters),
        }

    def parse_request(self, fields: list[str]) -> tuple[int, ...] | None:
        """A request line of stderr.log (uWSGI's own messages share it)."""
        return super().parse_request(fields[1:]) if fields[:1] == [REQUEST_MARK] else None

    def waiting(self, pids: list[int]) -> bool:
        """Every worker blocked in its wait for a connection: epoll_wait, or the thunder lock's futex."""
        return all(wait_syscall(pid) in WAITS for pid in pids)

    def ready(self) -> bool:
        """The pid file, the listener, and every worker in its wait (not just asleep: in the wait)."""
        import psutil  # here, not at the top: `modes` and `inspect` import every kind

        if self.master is None or not os.path.exists(os.path.join(self.directory, "uwsgi.pid")):
            return False
        try:
            workers = self.workers_of(psutil.Process(self.master.pid))
        except psutil.Error:
            return True  # start() reports the exit
        return self.waiting(workers) and self.listening(1)

    def start(self) -> None:
        super().start()
        if self.spec.cpus:  # --cpu-affinity is a core count per worker: pin the workers from here, in index order
            for index, pid in enumerate(self._pids):
                os.sched_setaffinity(pid, {self.spec.cpus[index % len(self.spec.cpus)]})

    def close(self) -> None:
        """The graceful shutdown (`q` on the master FIFO) once every worker is back in its wait, so that each
        request served is logged; then the base class's ladder for whatever is left."""
        import subprocess  # here, not at the top: `modes` and `inspect` import every kind

        master = self.master
        if master is not None and master.poll() is None and self.directory:
            # On a loaded machine a worker may need seconds to write its last log lines and get back to its
            # wait; the ladder's SIGTERM (die-on-term) would kill it before it logs: give both time.
            wait_for(lambda: self.waiting(self._pids), GRACE_S)
            try:
                fd = os.open(os.path.join(self.directory, "master.fifo"), os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:  # ENXIO: no master reads it (yet); the ladder follows
                if exc.errno not in (errno.ENXIO, errno.ENOENT):
                    raise
            else:
                try:
                    os.write(fd, b"q")
                finally:
                    os.close(fd)
                try:
                    master.wait(GRACE_S)
                except subprocess.TimeoutExpired:
                    pass
        super().close()


def _reading(argv: Sequence[str], pid: int | None) -> Reading:
    """What the server was started with, as its thunder-lock settings: read in its own root and environment where
    its pid is known, else from the command line alone (a relative path then not read)."""
    from ...probes.process_files import Started, started
    from .uwsgi_thunder import thunder_reading

    return thunder_reading(started(pid, argv) if pid is not None else Started(tuple(argv), {}))


class UwsgiKind(ServerKind):
    name = "uwsgi"
    connections_at_once = "one a thread"  # without threads or async: accept, serve, accept again
    # http11-socket would keep them, one connection per worker for as long as it stays open (its cures)
    closes_connections = (
        "its http-socket closes each connection after its answer (a second request on it found it closed)"
    )
    process_names = ("uwsgi", "pyuwsgi")
    summary = "PyPI's uWSGI (pyuwsgi) with prefork workers serving HTTP themselves, launched from a generated ini"
    witness = UwsgiServer.witness_source
    preferred_mode = "default"
    pool_setting = "uWSGI's threads, sized by --threads or threads in its ini"
    one_lock = "CPython's GIL"

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import LongLivedCure, SideBySide

        return (
            LongLivedCure(
                "http-socket = ADDRESS:PORT",
                "uWSGI closes each connection after its answer (pyuwsgi 2.0: a second request on one found it "
                f"closed): {CLOSES_EACH}",
                SideBySide(("default", "thunder-lock")),
            ),
            LongLivedCure(
                "http11-socket = ADDRESS:PORT",
                "keeps connections alive, and a worker serves one at a time for as long as it stays open (pyuwsgi "
                "2.0 with one worker a second connection had no answer in 3 s while the first was open): each "
                "long-lived connection holds a whole worker, and the rest wait in the listen queue",
                "not measured: the tool does not pass http11-socket to the uwsgi it launches yet",
            ),
            LongLivedCure(
                "reuse-port = true",
                "sets SO_REUSEPORT on the master's one socket, which every worker still shares (uWSGI's help: BSD "
                "only): no listener per worker, no split by hash",
                SideBySide(("default", "reuse-port")),
                "reuse-port",
            ),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return UWSGI_MODES

    def lock_first_of(self, argv: Sequence[str], pid: int | None = None) -> LockFirst | None:
        """The thunder lock where uWSGI was started with it (its command line, its UWSGI_* environment, or a config
        file named there): under load every worker may run at a look, and /proc alone then reads the default mode's
        herd."""
        from .uwsgi_thunder import THUNDER_LOCK, locked  # here: `modes` and `inspect` import every kind

        return THUNDER_LOCK if locked(_reading(argv, pid)) else None

    def attach_refused(self, argv: Sequence[str], port: int, pid: int | None = None) -> str | None:
        """Its socket at `port` bound by --socket speaks uWSGI's binary protocol, which neither HTTP nor the line
        client is answered in ('invalid request block size' in its log)."""
        from ...probes.process_files import Started, started
        from .uwsgi_sockets import binary_at

        named = binary_at(started(pid, argv) if pid is not None else Started(tuple(argv), {}), port)
        if named is None:
            return None
        return (
            f"whose socket at port {port} ({named}) speaks uWSGI's own binary protocol, the one a web server in front "
            "of it speaks (nginx's uwsgi_pass), not HTTP: neither --protocol http nor line is answered there (uWSGI "
            f"logs 'invalid request block size'). Start it with --http-socket ADDRESS:{port} in place of "
            f"--{named.partition(' = ')[0]} "
            "(http-socket in an ini), which speaks HTTP, and give --protocol http"
        )

    def settings_unread(self, argv: Sequence[str], pid: int | None = None) -> str | None:
        from .uwsgi_thunder import locked

        reading = _reading(argv, pid)
        said: list[str] = []
        if reading.start is not None and any(not os.path.isabs(name) for name in reading.read):
            said.append(
                f"uWSGI's relative config paths read from {reading.start}, its environment's PWD: where it started, "
                "as its chdir from there names the directory it is in now"
            )
        if reading.unread and not locked(reading):
            files = ", ".join(f"{name} not read ({why})" for name, why in reading.unread)
            said.append(
                f"uWSGI's {files}: a thunder-lock set there is not known, and workers all busy at a look then read as "
                "the default mode's herd"
            )
        return ". ".join(said) or None

    def missing(self) -> str | None:
        return uwsgi_missing()

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.accept_batch not in (0, 1):
            raise PlanError("--accept-batch does not apply to uwsgi: it accepts one connection per wakeup")

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return UwsgiServer(spec)
