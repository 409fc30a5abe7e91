"""HAProxy (Debian's 2.6), launched by the tool: one process whose *threads* are the workers.

A worker is a thread here: its index is HAProxy's thread number (`%[thread]`, 0-based), its "pid" the
kernel's thread id (threads in creation order), whose /proc entry has the thread's own state, context
switches and CPU. Each answer is `http-request return`ed with `worker THREAD pid PID`, and the log line
(the thread that ran the request's rules, the client port and the request's number on its connection, sent
to a UDP socket of the tool's: log_receiver.py says why not stdout) is the witness. With kept connections
(ServerSpec.keepalive) the answers keep the connection (no `Connection: close`) and idle ones are kept for
the run.

Modes: `threads` (one listener for all threads; since 2.3 the accepting thread hands each connection to
the less loaded of two threads, tune.listener.multi-queue: listener.c's two indexes walk the threads in
opposite directions, and of the two it points at the one with fewer of the listener's connections, queued
and held, gets it) and `shards` (one `bind` per thread, each its
own SO_REUSEPORT socket read by that thread only: what 2.7 calls `shards by-thread`). --accept-batch is
tune.maxaccept. With --work/--work-iters a per-thread Lua action burns the work before the answer.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...core.errors import ServerUnavailable
from ...core.kind_options import MAXCONN
from ...core.kinds import (
    BY_HASH,
    CLOSES_EACH,
    IDLE_CLOSE,
    ModeInfo,
    ServerKind,
)
from ...core.models import Mechanism, Model
from ...core.spec import ServerSpec
from ...core.work_clocks import PROCESS_CLOCK, THREAD_CLOCK
from .base import LaunchedServer
from .installed import installed

# psutil is imported where a running server uses it: `modes` and `inspect` import every kind
if TYPE_CHECKING:
    import psutil

    from ...core.cures import LongLivedCure
    from ...core.handoff import HandOffRead
    from ...core.target import Target
    from .haproxy_threads import ThreadAttribution
    from .log_receiver import LogReceiver

PACKAGE = "the haproxy package (2.4 or newer)"
# HAProxy's own default for tune.maxaccept (MAX_ACCEPT in its include/haproxy/defaults.h: 4 since 2.4, "64 divided
# by the number of processes" before; Debian 2.6's configuration.txt: "This value defaults to 4"). A run without
# --accept-batch is HAProxy as it comes: with 64 here, bpftrace saw its threads accept up to 64 connections a wakeup
# where HAProxy 2.6 started by hand without the line accepted at most 4.
DEFAULT_MAXACCEPT = 4
REPLY = 'lf-string "worker %[thread] pid %pid\\n"'  # the answer names the thread and the process
CLOSE = " hdr Connection close"  # one request per connection: HAProxy closes after its answer
# A kept connection waits, idle, between a load's requests (an open loop's may wait long) and for the whole
# run in a pool: HAProxy must not close it first. The client closes it; the run's own --timeout bounds a request.
IDLE = "24h"


HAPROXY_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        ModeInfo(
            "threads",
            "nbthread N on one listener: the accepting thread hands each connection to the less loaded of two threads",
            "one listening socket for all threads, in every thread's epoll without EPOLLEXCLUSIVE, so each "
            "connection wakes every idle thread (a herd); whichever thread accepts passes the connection to the "
            "accept queue of the less loaded of two threads (tune.listener.multi-queue, since 2.3: by the listener's "
            "connections each holds and has queued), so idle threads take turns",
            Model.FIFO,
            "shared",
            herds=True,  # herd -w 3 -n 30 here: 3.9 sleeps per connection, against 1.9 for shards
            settings=("bind ADDRESS:PORT", "nbthread N"),
            seen_as=Mechanism.EPOLL_HERD,  # every thread's epoll watches the one listener without EPOLLEXCLUSIVE
        ),
        ModeInfo(
            "shards",
            "one bind per thread (2.7's shards by-thread): each thread its own SO_REUSEPORT socket",
            "each thread listens on its own SO_REUSEPORT socket and serves what it accepts there, so the kernel "
            "picks the thread by a hash of the connection's 4-tuple, whether or not it is busy",
            Model.HASH,
            "per-worker",
            settings=("bind ADDRESS:PORT thread T (one per thread)", "nbthread N"),
            seen_as=Mechanism.REUSEPORT,
        ),
    )
}

# The work's clock is the CPU time of the thread that spins, read through Debian's lua-posix (posix.time's
# clock_gettime(CLOCK_THREAD_CPUTIME_ID)), as each nginx or lighttpd worker process spins on its own os.clock().
# Not core.now(), the time HAProxy cached at its last poll, which a busy loop inside one action does not refresh (1 ms
# of work burned 12 ms of CPU a request on average and one spin took 575 ms with no system call), and not os.clock()
# but where lua-posix is missing: that is the whole process's CPU, which threads spinning at once advance together,
# so each ended after about work/k of its own (0.67 ms of CPU a request for --work 1ms with 4 threads on 2 CPUs, 0.70
# with 2, where nginx's workers burned 1.04). Each thread's Lua (lua-load-per-thread: its own state, no global lock)
# writes which clock it took on stderr, read back as the run's evidence (WORK_CLOCK_MARK).
#
# One thread's requests must not share its clock either: HAProxy yields a Lua action every tune.lua.forced-yield
# instructions (10,000 by default) and runs the thread's other streams, whose spins then moved this one's clock (one
# thread, 32 connections: 0.98 ms of CPU a request for --work 1ms). The action yields only where it says, and counts
# the CPU of its own slices: none longer than WORK_SLICE_S, since HAProxy's watchdog kills a thread that has run 2 s
# without coming back to its scheduler (--work 3s did).
WORK_CLOCK_MARK = "accept-order work clock:"
FORCED_YIELD = 1_000_000_000  # instructions: far more than one slice runs (about 30 million in 100 ms)
WORK_SLICE_S = 0.1
WORK_SLICE_ITERS = 10_000_000  # --work-iters' additions between yields: about 30-100 ms here
WORK_LUA = f"""-- written by accept-order for one run: burn the run's work before the answer, in each thread
local work_s = (tonumber(os.getenv("ACCEPT_ORDER_WORK_US")) or 0) / 1e6
local work_iters = tonumber(os.getenv("ACCEPT_ORDER_WORK_ITERS")) or 0
local found, ptime = pcall(require, "posix.time")
local clock = os.clock -- the process's CPU: all threads' at once
local which = "{PROCESS_CLOCK}"
-- read once here: a clock that answers nil (an error) would fail every request, so the process's is kept then
if found and ptime.CLOCK_THREAD_CPUTIME_ID and type(ptime.clock_gettime(ptime.CLOCK_THREAD_CPUTIME_ID)) == "table" then
    local gettime, id = ptime.clock_gettime, ptime.CLOCK_THREAD_CPUTIME_ID
    clock = function()
        local t = gettime(id)
        return t.tv_sec + t.tv_nsec / 1e9
    end
    which = "{THREAD_CLOCK}"
end
io.stderr:write("{WORK_CLOCK_MARK} " .. which .. "\\n")
core.register_action("accept_order_work", {{ "http-req" }}, function(txn)
    local i, left = 0, work_iters
    while left > 0 do
        local n = math.min(left, {WORK_SLICE_ITERS})
        for _ = 1, n do i = i + 1 end
        left = left - n
        if left > 0 then core.yield() end
    end
    -- the CPU of this request's own slices: what the thread ran between them (other streams) is not its work.
    -- A slice's end is its own CPU since it began (now - start), never start + slice, which rounding may leave unmet
    local burned = 0
    while work_s > 0 do
        local slice, start = math.min(work_s - burned, {WORK_SLICE_S!r}), clock()
        local now = start
        while now - start < slice do now = clock(); i = i + 1 end
        burned = burned + (now - start)
        if burned >= work_s - 1e-9 then break end -- within a nanosecond: a sum's rounding, not work left
        core.yield()
    end
end)
"""


def haproxy_binary() -> str:
    found = installed("haproxy")
    if found is None:
        raise ServerUnavailable(f"haproxy is not installed here: install {PACKAGE}")
    return found


def haproxy_missing() -> str | None:
    try:
        haproxy_binary()
    except ServerUnavailable as exc:
        return str(exc)
    return None


def render_config(spec: ServerSpec, mode: ModeInfo, port: int, directory: str, log: str = "stdout") -> str:
    """haproxy.cfg for one run; `log`: where its request log goes (the tool's receiver, `127.0.0.1:PORT`)."""
    address = f"[{spec.host}]" if ":" in spec.host else spec.host
    threads = spec.workers
    maxaccept = -1 if spec.accept_batch == 0 else spec.accept_batch
    cpu_map = (
        "".join(f"    cpu-map 1/{t + 1} {spec.cpus[t % len(spec.cpus)]}\n" for t in range(threads)) if spec.cpus else ""
    )
    work = spec.work_us > 0 or spec.work_iters > 0
    lua = (
        f"    tune.lua.forced-yield {FORCED_YIELD}\n    lua-load-per-thread {os.path.join(directory, 'work.lua')}\n"
        if work
        else ""
    )
    if mode.queue == "per-worker":  # shards: a bind per thread
        binds = "".join(f"    bind {address}:{port} backlog {spec.backlog} thread {t + 1}\n" for t in range(threads))
    else:
        binds = f"    bind {address}:{port} backlog {spec.backlog}\n"
    action = "    http-request lua.accept_order_work\n" if work else ""
    # maxconn: HAProxy stops accepting at this many and leaves the rest in the listen queue (back-pressure)
    maxconn = f"    maxconn {spec.maxconn}\n" if spec.maxconn else ""
    return f"""# written by accept-order for one run; removed when it ends
global
    nbthread {threads}
{maxconn}    tune.maxaccept {maxaccept}
    log {log} format raw local0
{cpu_map}{lua}
defaults
    mode http
    log global
    timeout connect 10s
    timeout client {IDLE if spec.keepalive else "30s"}
    timeout server 30s
    timeout http-keep-alive {IDLE if spec.keepalive else "30s"}
    maxconn 100000

frontend accept_order
{maxconn}{binds}    log-format "%[var(txn.thread)] %cp %[var(sess.requests)]"
    http-request set-var(txn.thread) thread
    http-request set-var(sess.requests) var(sess.requests,0),add(1)
{action}    http-request return status 200 content-type text/plain {REPLY}{"" if spec.keepalive else CLOSE}
"""


class HaproxyServer(LaunchedServer):
    name = "haproxy"
    # soft stop: close the listeners, finish (and log) what is in hand, exit; SIGTERM would stop at once and
    # could lose the log line of a request whose answer already went out
    graceful = signal.SIGUSR1
    error_marks = ("[ALERT]",)
    # its log lines come to a UDP socket of ours (log_receiver.py: `log stdout` drops lines under load), and
    # are read from it, not from a file
    request_log = ""
    witness_source = "haproxy log"
    numbered_by = "sess.requests"

    def __init__(self, spec: ServerSpec) -> None:
        super().__init__(spec)
        self.mode = HAPROXY_MODES[spec.mode]
        self._receiver: LogReceiver | None = None
        self._work_clock: str | None = None  # what each thread's Lua said it spins on (WORK_CLOCK_MARK)

    @property
    def attribution(self) -> ThreadAttribution:  # type: ignore[override]
        from .haproxy_threads import ThreadAttribution

        return ThreadAttribution(self.master.pid if self.master is not None else 0, self.spec.workers)

    def command(self) -> list[str]:
        binary = haproxy_binary()
        conf = os.path.join(self.directory, "haproxy.cfg")
        from .log_receiver import LogReceiver

        self._receiver = LogReceiver()
        host, port = self._receiver.address
        with open(conf, "w") as f:
            f.write(render_config(self.spec, self.mode, self.port, self.directory, log=f"{host}:{port}"))
        with open(os.path.join(self.directory, "work.lua"), "w") as f:
            f.write(WORK_LUA)
        return [binary, "-db", "-f", conf]  # -db: in the foreground, as our child

    def environment(self) -> dict[str, str]:
        return {"ACCEPT_ORDER_WORK_US": str(self.spec.work_us), "ACCEPT_ORDER_WORK_ITERS": str(self.spec.work_iters)}

    def workers_of(self, master: psutil.Process) -> list[int]:
        return sorted(t.id for t in master.threads())  # thread ids grow in creation order: thread 0 first

    def ready(self) -> bool:
        """In the foreground HAProxy writes no pid file: ready once its listeners are there (one per thread
        with shards), each watched by a thread's poller."""
        wanted = self.spec.workers if self.mode.queue == "per-worker" else 1
        return self.listening(wanted) and self.polled(wanted)

    def read_logs(self) -> None:
        """Once HAProxy has stopped (it sent every line): the lines its log sent us, and how many of them
        the kernel dropped (the witness then says it lacks them)."""
        lines, self._dropped = self._receiver.close() if self._receiver is not None else ([], 0)
        self._log = [row for row in (self.parse_request(line.split()) for line in lines) if row is not None]
        self._shortages = self.shortages()
        self._work_clock = self.work_clock()

    def work_clock(self) -> str | None:
        """The clock --work spun on: THREAD_CLOCK where every thread's Lua said it, PROCESS_CLOCK where one said
        that (lua-posix missing), None with no work or where HAProxy's stderr said neither."""
        try:
            with open(os.path.join(self.directory, "stderr.log"), errors="replace") as f:
                said = {line.split(WORK_CLOCK_MARK, 1)[1].strip() for line in f if WORK_CLOCK_MARK in line}
        except OSError:
            return None
        return PROCESS_CLOCK if PROCESS_CLOCK in said else THREAD_CLOCK if THREAD_CLOCK in said else None

    def own_evidence(self) -> dict[str, Any]:
        """Beyond the log: the clock --work spun on (work_clock), so a report can say where it was the process's."""
        clock = self._work_clock if self.spec.work_us > 0 else None  # --work-iters counts, whatever the clock
        if clock == PROCESS_CLOCK and self.spec.workers == 1:
            # one thread: its process's CPU is its own, so each request burned the work (1.08 ms of CPU a request
            # for --work 1ms, lua-posix hidden), not less as threads spinning at once would have
            clock = THREAD_CLOCK
        return {**super().own_evidence(), **({"work_clock": clock} if clock else {})}

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._receiver is not None:  # a start that failed before its directory was read
                self._receiver.close()

    def parse_request(self, fields: list[str]) -> tuple[int, ...] | None:
        """`THREAD PORT N`: exactly three numbers. THREAD is the
        thread that ran the request's rules, kept in a variable when they run (the thread that writes the
        log line at the stream's end may be another), N the request's number on its connection (a session
        variable counts them)."""
        if len(fields) != 3 or not all(f.isdigit() for f in fields):
            return None
        return int(fields[0]), int(fields[1]), int(fields[2])

    def witness(self) -> dict[str, Any]:
        """HAProxy's own log per request; the thread numbers become the workers' ids."""
        pids = self._pids
        return self.witness_of([pids[row[0]] if 0 <= row[0] < len(pids) else -1 for row in self._log])


class HaproxyKind(ServerKind):
    name = "haproxy"
    connections_at_once = "many"  # an event loop a thread
    process_names = ("haproxy",)
    threads_are_workers = True
    sleeps = "each worker thread itself"  # a worker that is a process (haproxy's nbproc): its main thread
    handoff = (
        "HAProxy hands each connection it accepts to the less loaded of two threads (tune.listener.multi-queue, "
        "unless its config turns it off, which /proc does not show: inspect and observe read it there, and the "
        "verdict says what they read): the thread that accepts is not always the one that serves"
    )
    summary = "Debian's HAProxy with threads as its workers, launched from a generated config"
    witness = HaproxyServer.witness_source
    default_accept_batch = DEFAULT_MAXACCEPT
    options = (MAXCONN,)

    def plain_listener(self, h2c: bool, beside: str) -> str | None:
        dropped = "'proto h2'" if h2c else "'ssl crt ...'"
        return (
            f"HAProxy: 'bind 127.0.0.1:8080' in the same frontend, without {dropped}; the same threads accept on both"
        )

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import ClientLimit, IdleLimit, LongLivedCure, SideBySide

        return (
            LongLivedCure(
                "tune.listener.multi-queue on",
                "HAProxy's default since 2.3: the thread that accepts hands each connection to whichever of two "
                "threads holds fewer of the listener's connections (its accept queue counted), so a pool is "
                "spread over the threads by count, whichever thread was woken",
                SideBySide(
                    ("threads", "shards"),
                    said="the tool runs HAProxy with it on (threads) and cannot turn it off; against a socket per "
                    "thread",
                ),
                "threads",
            ),
            LongLivedCure(
                "bind ADDRESS:PORT thread T (one per thread)",
                # measured: 'latency --server haproxy -w 4 --modes threads,shards --pool -c 32
                # --requests-per-connection 0 --repeat 4': threads 8 8 8 8 in 4 of 4 runs, shards 12 8 7 5, 12 9 7 4,
                # 11 9 8 4, 9 9 7 7 (HAProxy's log agreeing): shown from threads, this row is no cure of a pool's split
                f"a SO_REUSEPORT socket per thread, which only that thread accepts from: {BY_HASH}; where the "
                "threads share one bind (multi-queue, HAProxy's default) a pool is spread by count, more evenly "
                "than a hash spreads it",
                SideBySide(("threads", "shards")),
                "shards",
            ),
            LongLivedCure(
                "option httpclose",
                # measured: HAProxy 2.6 with it and 'bind ... ssl crt ... alpn h2,http/1.1': curl --http1.1 read
                # 'connection: close'; h2load -c 8 -m 10 -D 3 kept the same 8 connections for 576,340 requests
                f"in the frontend: HAProxy closes each HTTP/1 client connection after its answer: {CLOSES_EACH}; "
                "an HTTP/2 one (a bind with alpn h2) stays open, only its streams end, so HTTP/2 clients keep "
                "their split (HAProxy 2.6 has no other limit on requests per client connection)",
                ClientLimit("option httpclose", requests=1),
            ),
            LongLivedCure("timeout http-keep-alive 5s", IDLE_CLOSE, IdleLimit("timeout http-keep-alive")),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return HAPROXY_MODES

    def why_of(self, mode: ModeInfo, argv: Sequence[str], pid: int | None = None) -> str:
        """One listener shared by the threads: whether they hand on what they accept is its config's
        tune.listener.multi-queue (and nbthread), read from the files its command line names (haproxy_config.py)."""
        if mode.name != "threads" or pid is None:
            return mode.why
        from .haproxy_config import read_settings, why_said  # here: `modes` and `inspect` import every kind

        return why_said(mode.why, read_settings(pid, argv))

    def handoff_read(self, argv: Sequence[str], pid: int) -> HandOffRead:
        """Its config's tune.listener.multi-queue and nbthread, read as why_of reads them (haproxy_config.py)."""
        from .haproxy_config import handoff_read, read_settings

        return handoff_read(read_settings(pid, argv))

    def missing(self) -> str | None:
        return haproxy_missing()

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return HaproxyServer(spec)
