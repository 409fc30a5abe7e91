"""A real server the tool launches (nginx, gunicorn): a master process and its workers, as a `Target`.

What every such server shares lives here: a private temporary directory for its config and logs (removed
after), the master in a session of its own (a terminal's Ctrl-C is ours to handle: we stop the server in
order) that dies with us (PR_SET_PDEATHSIG), readiness (every worker exists and sleeps), the workers'
pids in fork order as worker indices, the kernel's usage deltas, settling, and the stop ladder (the
server's graceful signal, then SIGTERM, then SIGKILL, then any worker a killed master left behind). A
subclass says how to write its config, how to start it, and what its own log says it served (the
independent witness a run is checked against).

The witness is one row per request the server logged: [worker pid, client port], and when the load kept
its connections (ServerSpec.keepalive) a third number where the server logs one, the request's place on its
connection (1 for its first: nginx's `$connection_requests`), which tells its connections apart exactly
(`numbered_by` names that field); a kind that logs none has its connections told apart by client port.
"""

from __future__ import annotations

import functools
import os
import select
import signal
import socket
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.errors import ListenError, ServerUnavailable, WorkerError
from ...core.processes import READY_TIMEOUT_S, STOP_TIMEOUT_S, die_with_parent, open_pidfd
from ...core.protocol import HTTP, ClientProtocol
from ...core.reaper import REAPER, end_group
from ...core.spec import ServerSpec
from ...core.started import Started
from ...core.waiting import wait_for
from ..watched import UsageDeltas, gone, proc_state
from .directories import DIRECTORY_PREFIX as DIRECTORY_PREFIX  # where callers found them before directories.py
from .directories import private_directory as private_directory
from .directories import remove_stale_directories as remove_stale_directories

# psutil and subprocess are imported where a running server uses them: `modes` and `inspect` import every kind
if TYPE_CHECKING:
    import subprocess

    import psutil

    from ...core.measures import WorkerCounters
    from ...core.target import ReplyAttribution

SETTLE_TIMEOUT_S = 2.0


def free_port(host: str) -> int:
    """A port the kernel just picked for us (these servers cannot be told to pick one and say which)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _master_setup(parent: int) -> None:
    """In the master between fork and exec: die with us (`parent`), and have the reaper watch its group
    already."""
    die_with_parent(parent)
    REAPER.announce_own_group()


class LaunchedServer(Started):
    #: the server's name in messages
    name: ClassVar[str]
    #: the signal that stops it gracefully (nginx: SIGQUIT; gunicorn: SIGTERM)
    graceful: ClassVar[int] = signal.SIGTERM
    #: files of the private directory, in order, whose first line with one of `error_marks` says why it failed
    error_logs: ClassVar[tuple[str, ...]] = ("stderr.log",)
    error_marks: ClassVar[tuple[str, ...]] = ("Error",)
    #: what the server writes in its `error_logs` when it runs out of something (connections, descriptors):
    #: a run that met it says so, since the connections it dropped only show as failures on the client side
    shortage_marks: ClassVar[tuple[str, ...]] = ("Too many open files",)
    #: the server's own log of who served what (the witness), a file of the private directory, and its name
    request_log: ClassVar[str] = "access.log"
    witness_source: ClassVar[str]
    #: the field of that log that numbers each request on its connection (1: its first), which a keep-alive
    #: run's witness carries as each row's third number; None: the kind logs none (its parse_request gives
    #: two numbers), and its connections are told apart by their client ports
    numbered_by: ClassVar[str | None] = None

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.directory = ""
        self.port = spec.port
        self.master: subprocess.Popen[bytes] | None = None
        self._pids: list[int] = []
        self._counted: list[int] = []  # the workers the last readiness check counted, all there and asleep
        self._pidfds: list[int] = []
        self._usage: UsageDeltas | None = None
        self._unsettled = 0
        # (worker, client port[, the request's number on its connection]) per request, from the server's own log
        self._log: list[tuple[int, ...]] = []
        self._dropped = 0  # lines of that log lost on their way to us, as the kernel counted them (HAProxy's)
        self._shortages: list[dict[str, Any]] = []  # what it logged running out of, read with the log

    # -- what a subclass says --------------------------------------------------------------------
    def command(self) -> list[str]:
        """Write the config into self.directory; return the argv that starts the master."""
        raise NotImplementedError

    def last_error(self) -> str:
        """The first line of the server's own logs that says why it stopped (for a failed start): the first
        names the cause; later ones (nginx's "still could not bind()") only follow from it."""
        for name in self.error_logs:
            try:
                with open(os.path.join(self.directory, name), errors="replace") as f:
                    lines = [line.strip() for line in f if any(mark in line for mark in self.error_marks)]
            except OSError:
                continue
            if lines:
                return lines[0][:300]
        return "no message"

    def environment(self) -> dict[str, str]:
        """Variables the master starts with, besides ours."""
        return {}

    def ready(self) -> bool:
        """Beyond every worker asleep: whatever else says the server is listening (a pid file)."""
        return True

    def listening(self, wanted: int) -> bool:
        """At least `wanted` sockets listen on the port (one per worker where each opens its own)."""
        from ...probes.listeners import listening_sockets

        try:
            return len(listening_sockets(self.port)) >= wanted
        except OSError:
            return True  # nothing to ask: the workers asleep is all there is to go by

    def polled(self, wanted: int) -> bool:
        """At least `wanted` of the port's listeners are watched by an epoll of the master's process. A
        thread of a threaded server (HAProxy) sleeps in its start-up barrier before it adds its own listener
        to its poller: until then the listener queues its share unseen, and inspect rightly finds one waiter."""
        from ...probes.fd_table import FdTables
        from ...probes.listeners import listening_sockets

        if self.master is None:
            return False
        try:
            inodes = {row.inode for row in listening_sockets(self.port)}
            files = FdTables().files(self.master.pid)
        except OSError:
            return True  # nothing to ask: the workers asleep is all there is to go by
        watched = {w.inode for f in files.values() if f.kind == "eventpoll" for w in f.watching(inodes)}
        return len(watched) >= wanted

    def workers_of(self, master: psutil.Process) -> list[int]:
        """The worker pids, in index order: the master's children in fork order (HAProxy: its threads)."""
        from ...probes.children import children

        return [p.pid for p in sorted(children(master), key=lambda p: (p.create_time(), p.pid))]

    def parse_request(self, fields: list[str]) -> tuple[int, ...] | None:
        """(worker pid, client port) from one line of the request log, split, and the request's number on
        its connection where the kind logs one (`numbered_by`); None for any other line."""
        if len(fields) < 2:
            return None
        pid, port = fields[0], fields[1]
        return (int(pid), int(port)) if pid.isdigit() and port.isdigit() else None

    def read_logs(self) -> None:
        """After stop, before the directory is removed: read what the server logged it served, and what it
        logged running out of."""
        try:
            with open(os.path.join(self.directory, self.request_log)) as f:
                self._log = [row for row in (self.parse_request(line.split()) for line in f) if row is not None]
        except OSError:
            self._log = []
        self._shortages = self.shortages()

    def shortages(self) -> list[dict[str, Any]]:
        """Per `shortage_marks` entry found in the error logs: how many lines say it, and the first one."""
        found: dict[str, dict[str, Any]] = {}
        for name in self.error_logs:
            try:
                with open(os.path.join(self.directory, name), errors="replace") as f:
                    for line in f:
                        mark = next((m for m in self.shortage_marks if m in line), None)
                        if mark is None:
                            continue
                        entry = found.setdefault(
                            mark,
                            {"server": self.name, "log": name, "mark": mark, "lines": 0, "first": line.strip()[:300]},
                        )
                        entry["lines"] += 1
            except OSError:
                continue
        return list(found.values())

    def access_log(self) -> list[tuple[int, ...]]:
        """(worker, client port[, number on its connection]) per request, in the server's own order: the
        witness a run is checked against."""
        return list(self._log)

    def sequence(self) -> list[int]:
        """After stop: which worker served each request, in the server's own log order (serve's sequence)."""
        index = {pid: i for i, pid in enumerate(self._pids)}
        return [index[row[0]] for row in self.witness()["requests"] if row[0] in index]

    def own_evidence(self) -> dict[str, Any]:
        return {"witness": self.witness(), **({"shortages": list(self._shortages)} if self._shortages else {})}

    def witness(self) -> dict[str, Any]:
        """What the server itself says it served (after stop)."""
        return self.witness_of([row[0] for row in self._log])

    def witness_of(self, workers: list[int]) -> dict[str, Any]:
        """The witness with `workers` as each logged request's worker pid (HAProxy logs thread numbers): rows
        of [pid, port], with the request's number on its connection when the load kept its connections
        and the kind logs one (a one-request run's rows stay two numbers, as files before it)."""
        numbered = self.spec.keepalive and self.numbered_by is not None
        rows = [[pid, row[1], *(row[2:3] if numbered else ())] for pid, row in zip(workers, self._log, strict=True)]
        return {
            "source": self.witness_source,
            "requests": rows,
            **({"numbered_by": self.numbered_by} if numbered else {}),
            **({"dropped": self._dropped} if self._dropped else {}),
        }

    # -- the Target interface -------------------------------------------------------------------
    @property
    def address(self) -> tuple[str, int]:
        return (self.spec.host, self.port)

    @property
    def pids(self) -> list[int]:
        return self._pids

    @property
    def attribution(self) -> ReplyAttribution:
        from ...core.target import ReplyAttribution

        return ReplyAttribution(tuple(self._pids))  # the server answers "worker PID"

    @property
    def protocol(self) -> ClientProtocol:
        return HTTP

    @property
    def unsettled(self) -> int:
        return self._unsettled

    def death_fds(self) -> list[int]:
        return list(self._pidfds)

    # -- start ----------------------------------------------------------------------------------
    def start(self) -> None:
        import subprocess

        import psutil

        if self.spec.port:  # checked before anything is launched (see refuse_foreign_group)
            from ..modes.base import below_start_refused
            from ..modes.reuseport import refuse_foreign_group

            if (refused := below_start_refused(self.spec.host, self.spec.port)) is not None:
                raise ListenError(refused)
            refuse_foreign_group(
                self.spec.host,
                self.spec.port,
                f"{self.name} would join its SO_REUSEPORT group and share its connections, or fail to listen",
            )
        from ...core.user_tasks import too_many_tasks

        workers = f"{self.spec.workers} worker{'s' if self.spec.workers != 1 else ''}"
        # and the reaper private_directory starts, where none runs yet: missed, nginx's last worker was not forked
        own, watcher = (0, "") if REAPER.running() else (1, ", and the process this tool starts to end them,")
        if refused := too_many_tasks(self.spec.workers + 1 + own, f"{self.name}'s master and {workers}{watcher}"):
            raise ServerUnavailable(refused)  # its master's fork would fail, each server its own way
        remove_stale_directories()
        self.directory = private_directory(f"{DIRECTORY_PREFIX}{self.name}-{os.getpid()}-")
        self.port = self.spec.port or free_port(self.spec.host)
        argv = self.command()
        Started.begun = True  # the server's master: an interrupt from here on stops its workers
        with open(os.path.join(self.directory, "stderr.log"), "wb") as stderr:
            self.master = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=stderr,
                cwd=self.directory,
                env={**os.environ, **self.environment()},
                start_new_session=True,  # the terminal's Ctrl-C is ours: we stop the server in order
                preexec_fn=functools.partial(_master_setup, os.getpid()),
            )
        REAPER.watch_group(self.master.pid)  # its session's leader: the group's id is its pid
        master = psutil.Process(self.master.pid)
        ready = wait_for(lambda: self._ready(master), 2 * READY_TIMEOUT_S, interval_s=0.005)
        if self.master.poll() is not None:
            raise ServerUnavailable(f"{self.name} exited with status {self.master.returncode}: {self.last_error()}")
        if not ready:
            raise WorkerError(
                f"{self.name}'s {self.spec.workers} workers were not ready within {2 * READY_TIMEOUT_S:g} s"
            )
        # the workers the passing check counted and saw asleep: a read after it may skip one (the kernel's
        # children lists, probes/children.py); a read anew only where the check passed on an error
        self._pids = self._counted or self.workers_of(master)
        self._pidfds = [fd for fd in map(open_pidfd, self._pids) if fd is not None]
        self._usage = UsageDeltas(self._pids)

    def _ready(self, master: psutil.Process) -> bool:
        """Every worker exists and sleeps (in its wait), and the server says it listens."""
        import psutil

        self._counted = []
        if self.master is None or self.master.poll() is not None:
            return True  # start() reports the exit
        try:
            workers = self.workers_of(master)
        except psutil.Error:
            return True
        if len(workers) != self.spec.workers or not all(proc_state(pid) == "S" for pid in workers):
            return False
        self._counted = workers
        return self.ready()

    # -- while running --------------------------------------------------------------------------
    def check_alive(self) -> None:
        if self.master is not None and self.master.poll() is not None:
            raise WorkerError(
                f"{self.name}'s master (pid {self.master.pid}) exited with status {self.master.returncode}"
            )
        for index, pid in enumerate(self._pids):
            if gone(pid):
                raise WorkerError(f"{self.name} worker {index} (pid {pid}) died", index)

    def wait_for_death(self) -> None:
        """Block until the master or a worker dies, then raise WorkerError naming it (Ctrl-C interrupts
        the wait). The workers' pidfds wake it at once; the master is checked every second."""
        while True:
            select.select(self._pidfds, [], [], 1.0)
            self.check_alive()

    def settle(self) -> None:
        """Before a sequential connection: every worker asleep in its wait."""
        if not wait_for(lambda: all(proc_state(pid) == "S" for pid in self._pids), SETTLE_TIMEOUT_S):
            self._unsettled += 1

    # -- stop -----------------------------------------------------------------------------------
    def stop(self) -> list[WorkerCounters]:
        """The workers' usage deltas; then a graceful stop and the server's own log read."""
        counters = self._usage.counters() if self._usage is not None else []
        self.close()
        return counters

    def check_stopped(self) -> None:
        """The server's workers are not ours to report deaths after the run: check_alive covered the run."""

    def close(self) -> None:
        """Stop gracefully, then SIGTERM, then SIGKILL master and workers; read the logs; remove the directory."""
        import shutil
        import subprocess

        master = self.master
        if master is not None and master.poll() is None:
            for sig, wait_s in ((self.graceful, STOP_TIMEOUT_S), (signal.SIGTERM, 1.0), (signal.SIGKILL, 1.0)):
                try:
                    master.send_signal(sig)
                    master.wait(wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if master is not None and master.poll() is None:
            master.kill()
            master.wait()
        for pid in self._pids:  # a worker orphaned by a killed master must not keep the port
            if not gone(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        wait_for(lambda: all(gone(pid) for pid in self._pids), STOP_TIMEOUT_S)
        if master is not None:
            end_group(master.pid)  # a worker that left the master's children is still in its group
            REAPER.done_group(master.pid)
        for fd in self._pidfds:
            os.close(fd)
        self._pidfds = []
        if self.directory and os.path.isdir(self.directory):
            self.read_logs()
            shutil.rmtree(self.directory, ignore_errors=True)
            REAPER.done_directory(self.directory)
            self.directory = ""
        self.master = None
