"""h2o (Debian's 2.2), launched by the tool: one process whose `num-threads` event-loop threads are the workers.

As with HAProxy a worker is a thread: its index is its place among the threads that serve (the main thread
is the first), its "pid" the kernel's thread id, whose /proc entry has the thread's own state, context
switches and CPU. h2o 2.2 has no SO_REUSEPORT option: the one listening socket is dup'ed for each thread,
and each thread's own epoll watches it without EPOLLEXCLUSIVE (read from /proc here, Linux 6.18): one
connection wakes every idle thread, a thundering herd (h2o#1636 reports threads serving unevenly). h2o's
other thread (a timer, in nanosleep) never waits on the listener and is not a worker.

An mruby handler reads its own thread id (/proc/thread-self/stat), answers `worker TID`, and sets a
response header that the access log writes (`%{x-accept-order-worker}o %{remote}p %m`): the witness.
Running as root, h2o switches to nobody after opening its logs; nothing of the private directory is read
after that (the handler is inline in the config), so it stays 0700.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections import Counter
from typing import TYPE_CHECKING

from ...core.errors import PlanError, ServerUnavailable
from ...core.kinds import IDLE_CLOSE, ModeInfo, ServerKind
from ...core.models import Mechanism
from ...core.spec import ServerSpec
from ...core.waiting import wait_for
from ..watched import proc_state
from .base import SETTLE_TIMEOUT_S, LaunchedServer

# psutil is imported where a running server uses it: `modes` and `inspect` import every kind
if TYPE_CHECKING:
    import psutil

    from ...core.cures import LongLivedCure
    from ...core.target import Target

PACKAGE = "apt-get install h2o"
WORKER_HEADER = "x-accept-order-worker"

# A thread accepts until EAGAIN per wakeup (h2o has no setting for it), then reads the request, which
# sleeps: no batches, and its context switches are not wakeups.
H2O_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        ModeInfo(
            "threads",
            "num-threads N: one process, each event-loop thread waits for the shared socket in an epoll of its own",
            "every h2o thread waits for the one listening socket in epoll_wait on an epoll of its own that watches "
            "it without EPOLLEXCLUSIVE: one connection wakes every idle thread (a thundering herd), and whichever "
            "accepts first serves it",
            None,
            "shared",
            herds=True,
            batches=False,
            settings=("num-threads: N",),
            seen_as=Mechanism.EPOLL_HERD,
        ),
    )
}


def h2o_binary() -> str:
    path = shutil.which("h2o")
    if path is None:
        raise ServerUnavailable(f"h2o is not installed here: {PACKAGE}")
    return path


def h2o_missing() -> str | None:
    try:
        h2o_binary()
    except ServerUnavailable as exc:
        return str(exc)
    return None


def handler_ruby(work_us: int, work_iters: int) -> str:
    """The mruby handler, indented for the YAML block it goes in: the work (Time.now is the wall clock: the
    threads share the process's CPU clock), then `worker TID` and the header the access log writes."""
    lines = [
        "Proc.new do |env|",
        '  tid = File.open("/proc/thread-self/stat") { |f| f.read }.split(" ")[0]',
        "  i = 0",
        f"  {work_iters}.times {{ i += 1 }}",
    ]
    if work_us:
        lines += [f"  stop = Time.now.to_f + {work_us / 1e6!r}", "  while Time.now.to_f < stop do i += 1 end"]
    lines += [
        f'  [200, {{"content-type" => "text/plain", "{WORKER_HEADER}" => tid}}, ["worker #{{tid}}\\n"]]',
        "end",
    ]
    return "".join(f"          {line}\n" for line in lines)


# Kept connections (ServerSpec.keepalive): h2o 2.2 has no limit on requests per connection, and its wait for
# the next request (http1-request-timeout, seconds) also closes an idle kept connection: lifted past any run.
KEEPALIVE = "http1-request-timeout: 86400\n"


def render_config(spec: ServerSpec, port: int, directory: str) -> str:
    """h2o.conf (YAML) for one run; every path in `directory`."""
    return f"""# written by accept-order for one run; removed when it ends
num-threads: {spec.workers}
{KEEPALIVE if spec.keepalive else ""}error-log: {directory}/error.log
listen:
  host: {spec.host}
  port: {port}
hosts:
  default:
    paths:
      /:
        mruby.handler: |
{handler_ruby(spec.work_us, spec.work_iters)}    access-log:
      path: {directory}/access.log
      format: "%{{{WORKER_HEADER}}}o %{{remote}}p %m %{{connection-id}}x"
"""


class H2oServer(LaunchedServer):
    name = "h2o"
    graceful = signal.SIGTERM  # sent once every thread is back in its wait (close())
    error_logs = ("stderr.log", "error.log")
    error_marks = ("failed", "error", "Error", "unknown", "cannot")
    witness_source = "h2o access log"  # `%{x-accept-order-worker}o %{remote}p %m %{connection-id}x`
    # h2o numbers its connections, not the requests on one: the witness counts each connection's lines in order
    numbered_by = "%{connection-id}x"

    def __init__(self, spec: ServerSpec) -> None:
        super().__init__(spec)
        self.mode = H2O_MODES[spec.mode]

    def command(self) -> list[str]:
        binary = h2o_binary()
        conf = os.path.join(self.directory, "h2o.conf")
        with open(conf, "w") as f:
            f.write(render_config(self.spec, self.port, self.directory))
        return [binary, "-c", conf]

    def workers_of(self, master: psutil.Process) -> list[int]:
        """The threads asleep in an epoll that watches our listener, by thread id (creation order: the main
        thread first)."""
        from ...probes.fd_table import open_files  # here, not at the top: `modes` and `inspect` import every kind
        from ...probes.listeners import listening_sockets
        from ...probes.proc_waits import EPOLL_WAITS, thread_wait

        try:
            listeners = {sock.inode for sock in listening_sockets(self.port)}
        except OSError:
            return []
        epolls = {fd: f for fd, f in open_files(master.pid).items() if f.kind == "eventpoll"}
        workers = []
        for thread in master.threads():
            wait = thread_wait(master.pid, thread.id)
            epoll = epolls.get(wait.fd) if wait.call in EPOLL_WAITS and wait.fd is not None else None
            if epoll is not None and any(w.inode in listeners for w in epoll.watches):
                workers.append(thread.id)
        return sorted(workers)

    def waiting(self, tid: int) -> bool:
        from ...probes.proc_waits import EPOLL_WAITS, thread_wait

        pid = self.master.pid if self.master is not None else tid
        return proc_state(tid) == "S" and thread_wait(pid, tid).call in EPOLL_WAITS

    def start(self) -> None:
        super().start()
        if self.spec.cpus:  # h2o 2.2 has no affinity setting: pin the threads from here, in index order
            for index, tid in enumerate(self._pids):
                os.sched_setaffinity(tid, {self.spec.cpus[index % len(self.spec.cpus)]})

    def settle(self) -> None:
        if not wait_for(lambda: all(self.waiting(tid) for tid in self._pids), SETTLE_TIMEOUT_S):
            self._unsettled += 1

    def parse_request(self, fields: list[str]) -> tuple[int, ...] | None:
        """(thread id, client port, connection id)."""
        if len(fields) not in (3, 4) or not (fields[0].isdigit() and fields[1].isdigit()):
            return None  # a request our handler did not answer has no worker header: `-`
        if len(fields) == 4 and fields[3].isdigit():
            return int(fields[0]), int(fields[1]), int(fields[3])
        return int(fields[0]), int(fields[1])

    def read_logs(self) -> None:
        """The log's rows, each connection id turned into the request's number on that connection (its
        lines are in the order its requests were answered: one at a time on an HTTP/1 connection)."""
        super().read_logs()
        seen: Counter[int] = Counter()
        rows: list[tuple[int, ...]] = []
        for row in self._log:
            if len(row) > 2:
                seen[row[2]] += 1
                row = (row[0], row[1], seen[row[2]])
            rows.append(row)
        self._log = rows

    def close(self) -> None:
        """SIGTERM once every thread is back in its wait (each request it served is then logged), then the
        base class's ladder."""
        if self.master is not None and self.master.poll() is None and self._pids:
            wait_for(lambda: all(self.waiting(tid) for tid in self._pids), SETTLE_TIMEOUT_S)
        super().close()


class H2oKind(ServerKind):
    name = "h2o"
    connections_at_once = "many"  # an event loop a thread
    process_names = ("h2o",)
    loops_are_workers = True  # num-threads event loops, and a timer thread that serves none
    summary = "Debian's h2o with num-threads event-loop threads as its workers and an mruby handler"
    witness = H2oServer.witness_source
    preferred_mode = "threads"
    # h2o 2.2's H2O_SOMAXCONN: 'simply use a large value, and let the kernel clip it' (net.core.somaxconn)
    no_backlog = "h2o 2.2 has no setting for it: its listen() asks for 65535, which the kernel caps at somaxconn"

    def plain_listener(self, h2c: bool, beside: str) -> str | None:
        # its plain listener speaks h2c and HTTP/1.1 alike: only a TLS one fails the load
        return f"h2o: a 'listen: 8080' with no 'ssl' block beside the {beside} one; the same threads accept on both"

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import IdleLimit, LongLivedCure

        return (
            LongLivedCure(
                "http1-request-timeout: 10",
                "h2o 2.2's timeout for an HTTP/1 request to come, which also closes a keep-alive connection idle "
                "that long (at 1, h2o 2.2 closed a kept connection 1 s after its answer); a busy pool never reaches "
                "it, and a reopened connection is placed again (h2o 2.2 has no limit on requests per connection, no "
                "SO_REUSEPORT)",
                IdleLimit("http1-request-timeout"),
            ),
            LongLivedCure("http2-idle-timeout: 10", f"for HTTP/2: {IDLE_CLOSE}", IdleLimit("http2-idle-timeout")),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return H2O_MODES

    def missing(self) -> str | None:
        return h2o_missing()

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.accept_batch not in (0, 1):
            raise PlanError("--accept-batch does not apply to h2o: it has no setting for it")

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return H2oServer(spec)
