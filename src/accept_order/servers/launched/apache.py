"""Apache httpd (Debian's apache2), launched by the tool from a generated config (apache_config.py).

A worker is a child process, in prefork and in event alike: an event child's listener thread accepts for
the whole child, so the child is what the kernel chooses between. Its pid, in fork order, is the worker's
index. mod_lua answers `worker PID`, and the access log (`%P %{remote}p %m`) is the witness.

Running as root, Apache switches its children to www-data: the private directory is given to that user
(still mode 0700) so that they can read the handler; the master opens the logs before it forks.

Stopping: SIGTERM (Apache's immediate stop: children end at once) once every child is back in its wait,
so that each request served has been logged; SIGWINCH (graceful-stop) would cost a second per stop
(prefork_run's "Pause for a second") and wakes idle children with dummy requests.
"""

from __future__ import annotations

import os
import pwd
import signal
from typing import TYPE_CHECKING

from ...core.errors import PlanError, ServerUnavailable
from ...core.kinds import (
    BY_HASH,
    CLOSES_EACH,
    IDLE_CLOSE,
    ModeInfo,
    ServerKind,
    redraws,
)
from ...core.processes import status_switches
from ...core.spec import ServerSpec
from ...core.waiting import wait_for
from ..watched import UsageDeltas, proc_state
from .apache_config import (
    APACHE_MODES,
    LOCK_FIRST,
    THREADS_PER_CHILD,
    apache_binary,
    apache_missing,
    buckets,
    handler_lua,
    online_cpus,
    render_config,
    run_as,
)
from .base import SETTLE_TIMEOUT_S, LaunchedServer, free_port

if TYPE_CHECKING:
    from ...core.cures import LongLivedCure
    from ...core.target import Target


def thread_group_usage(pid: int) -> tuple[int, int, float]:
    """(voluntary switches, involuntary ones, CPU seconds) summed over every thread of `pid`: an event
    child's work is done by its listener and worker threads, which /proc/PID/status does not count."""
    from ...probes.proc_waits import thread_ids  # here, not at the top: `modes` and `inspect` import every kind

    voluntary = involuntary = 0
    cpu_ns = 0
    tids = thread_ids(pid)
    if not tids:
        raise ProcessLookupError(pid)
    for tid in tids:
        base = f"/proc/{pid}/task/{tid}"
        try:
            v, i = status_switches(f"{base}/status") or (0, 0)
            voluntary, involuntary = voluntary + v, involuntary + i
            with open(f"{base}/schedstat", "rb") as f:
                cpu_ns += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended between the listing and the read
    return voluntary, involuntary, cpu_ns / 1e9


class ThreadGroupUsage(UsageDeltas):
    @staticmethod
    def _usage(pid: int) -> tuple[int, int, float] | None:
        try:
            return thread_group_usage(pid)
        except OSError:
            return None


class ApacheServer(LaunchedServer):
    name = "apache"
    graceful = signal.SIGTERM  # Apache's stop; sent once every child is back in its wait (close())
    error_logs = ("stderr.log", "error.log")
    # the line that names the cause: a bind failure, a syntax error, a module that would not load
    error_marks = ("could not", "Syntax error", "Cannot load", ":emerg]", ":alert]", ":crit]", "Unable")
    shortage_marks = ("server reached MaxRequestWorkers", "Too many open files")
    witness_source = "apache access log"  # `%P %{remote}p %m %k`
    numbered_by = "%k"  # keep-alive requests before this one on its connection (the witness adds 1)

    def __init__(self, spec: ServerSpec) -> None:
        super().__init__(spec)
        self.mode = APACHE_MODES[spec.mode]
        self.prefork = self.mode.name.startswith("prefork")

    def command(self) -> list[str]:
        binary = apache_binary()
        other_port = free_port(self.spec.host) if self.mode.name == "prefork-mutex" else 0
        conf = os.path.join(self.directory, "httpd.conf")
        with open(conf, "w") as f:
            f.write(render_config(self.spec, self.mode, self.port, other_port, self.directory))
        with open(os.path.join(self.directory, "handler.lua"), "w") as f:
            f.write(handler_lua(self.spec.work_us, self.spec.work_iters))
        user = run_as()
        if user is not None:  # the children (www-data) must read the handler; still no one else's
            os.chown(self.directory, pwd.getpwnam(user[0]).pw_uid, -1)
        return [binary, "-f", conf, "-DFOREGROUND"]

    def listeners(self) -> int:
        return buckets(self.spec.workers, online_cpus()) if self.mode.name == "buckets" else 1

    def waiting(self, pid: int) -> bool:
        """The child waits for a connection: prefork's in accept, or (the mutex) in epoll_wait or on the
        lock; an event child has all its threads, its listener thread in epoll_wait, and none running."""
        from ...probes.proc_waits import ACCEPTS, EPOLL_WAITS, thread_ids, thread_wait

        tids = thread_ids(pid)
        if not tids or not all(proc_state(tid) == "S" for tid in tids):  # woken, even if not yet running
            return False
        waits = [thread_wait(pid, tid) for tid in tids]
        if self.prefork:
            return waits[0].call in ACCEPTS | EPOLL_WAITS or waits[0].lock
        return len(tids) >= THREADS_PER_CHILD + 2 and any(w.call in EPOLL_WAITS for w in waits)

    def ready(self) -> bool:
        """The pid file, every listener, and every child in its wait (not only asleep: in the wait)."""
        import psutil  # here, not at the top: `modes` and `inspect` import every kind

        if self.master is None or not os.path.exists(os.path.join(self.directory, "httpd.pid")):
            return False
        try:
            children = self.workers_of(psutil.Process(self.master.pid))
        except psutil.Error:
            return True  # start() reports the exit
        return all(self.waiting(pid) for pid in children) and self.listening(self.listeners())

    def start(self) -> None:
        super().start()
        self._usage = ThreadGroupUsage(self._pids)
        if self.spec.cpus:  # Apache has no affinity setting: pin each child, every thread, in index order
            from ...probes.proc_waits import thread_ids

            for index, pid in enumerate(self._pids):
                for tid in thread_ids(pid):
                    os.sched_setaffinity(tid, {self.spec.cpus[index % len(self.spec.cpus)]})

    def settle(self) -> None:
        """Before a sequential connection: every child back in its wait (an event child's main thread
        sleeps whatever its listener does, so the base class's process state says nothing)."""
        if not wait_for(lambda: all(self.waiting(pid) for pid in self._pids), SETTLE_TIMEOUT_S):
            self._unsettled += 1

    def parse_request(self, fields: list[str]) -> tuple[int, ...] | None:
        """`PID PORT METHOD KEEPALIVES` -> (pid, port, the request's number on its connection: %k + 1);
        Apache's own dummy requests (OPTIONS *, to wake a child) are not ours."""
        if len(fields) not in (3, 4) or fields[2] == "OPTIONS" or not (fields[0].isdigit() and fields[1].isdigit()):
            return None
        if len(fields) == 4 and fields[3].isdigit():
            return int(fields[0]), int(fields[1]), int(fields[3]) + 1
        return int(fields[0]), int(fields[1])

    def close(self) -> None:
        """SIGTERM once every child is back in its wait (each request it served is then logged), then the
        base class's ladder."""
        if self.master is not None and self.master.poll() is None and self._pids:
            wait_for(lambda: all(self.waiting(pid) for pid in self._pids), SETTLE_TIMEOUT_S)
        super().close()


class ApacheKind(ServerKind):
    name = "apache"
    connections_at_once = "one a thread"  # prefork's children one thread each, event's a pool
    process_names = ("apache2", "httpd")
    summary = "Debian's Apache httpd (prefork or event MPM) with a mod_lua handler, launched from a generated config"
    witness = ApacheServer.witness_source
    preferred_mode = "event"  # Debian's default MPM
    lock_first = LOCK_FIRST  # prefork-mutex's accept mutex
    # ThreadGroupUsage: an event child's listener and worker threads (a prefork child is its one thread)
    sleeps = "every thread of each child process"
    pool_setting = "Apache's ThreadsPerChild, each child's threads under its event or worker MPM"  # C: no one lock

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import ClientLimit, IdleLimit, LongLivedCure, SideBySide

        return (
            LongLivedCure(
                "MaxKeepAliveRequests 100",
                redraws(
                    "with KeepAlive On, Apache closes a connection after this many requests on it (100 by "
                    "default, 0: no limit)"
                ),
                ClientLimit("MaxKeepAliveRequests", launched="MaxKeepAliveRequests 0 (no limit) under a kept load"),
            ),
            LongLivedCure("KeepAliveTimeout 5", IDLE_CLOSE, IdleLimit("KeepAliveTimeout")),
            LongLivedCure(
                "KeepAlive Off",
                f"Apache closes every connection after its answer: {CLOSES_EACH}",
                ClientLimit(
                    "KeepAlive Off",
                    requests=1,
                    launched="KeepAlive Off under a load of one request per connection (KeepAlive On under a kept one)",
                ),
            ),
            LongLivedCure(
                "ListenCoresBucketsRatio R",
                f"a SO_REUSEPORT listener per bucket of children: {BY_HASH}",
                SideBySide(("event", "buckets")),
                "buckets",
            ),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return APACHE_MODES

    def missing(self) -> str | None:
        return apache_missing()

    def unavailable(self, mode: str) -> str | None:
        missing = self.missing()
        if missing is None and mode == "buckets" and online_cpus() < 2:
            return "ListenCoresBucketsRatio makes one listener per online CPU at most: this machine has one"
        return missing

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.accept_batch not in (0, 1):
            raise PlanError("--accept-batch does not apply to apache: it accepts one connection per wakeup")
        if spec.mode == "buckets" and spec.workers < 2:
            raise PlanError("apache buckets needs --workers 2 or more (one child per bucket at least)")
        try:
            run_as()
        except ServerUnavailable as exc:
            raise PlanError(str(exc)) from None

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return ApacheServer(spec)
