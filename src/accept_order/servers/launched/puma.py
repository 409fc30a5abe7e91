"""Puma (Debian's puma, 5.6) in cluster mode, launched by the tool: a master and forked workers, each with
a thread pool, serving the Rack app of rack_app.py from a generated config.

The master binds the one listening socket before it forks, so every worker inherits it. In each worker one
thread ("puma srv") waits for it in IO.select, which is select(2) (pselect6 here) on the listener and a
pipe: a non-exclusive wait entry per worker, so one connection wakes every idle worker (a thundering
herd) and whoever calls accept first serves it (puma#3934, "investigate EPOLLEXCLUSIVE": Puma uses none).
Between select and accept a worker waits while its pool is full (`wait_until_not_full`), and with
`wait_for_less_busy_worker` (Puma 5.0+; off unless set in 5.6; the DSL's value is 5 ms) a worker whose pool
has a busy thread sleeps up to that long first, so that an idle worker wins the race: a sleep sort among
the woken workers, which changes nothing for an idle server (no thread busy) and nothing /proc shows.
The pool is Puma's MRI default, 0 to 5 threads (with one thread a worker whose pool is busy does not even
select, and the setting has nothing to act on).

A worker is a process of several threads, and only its server thread waits for connections: the kernel's
counters of a worker (its sleeps, which count how many workers one connection woke) are that thread's, and
its CPU is every thread's.

The witness is Puma's own request log (`log_requests`), which in cluster mode prefixes each line with the
writing worker's pid (`[PID]`); the app hands it the client port (rack_app.py).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...core.errors import PlanError, ServerUnavailable
from ...core.kinds import IDLE_CLOSE, ModeInfo, ServerKind, redraws
from ...core.models import Mechanism
from ...core.spec import ServerSpec
from ...core.waiting import wait_for
from ..watched import ThreadedUsage, thread_ids
from .base import SETTLE_TIMEOUT_S, LaunchedServer
from .rack_app import parse_common_log, ruby_error, write_app

if TYPE_CHECKING:
    from ...core.cures import LongLivedCure
    from ...core.target import Target

PACKAGE = "apt-get install puma"
THREADS = (0, 5)  # Puma 5.6's own default on MRI (min 0, max 5)
LESS_BUSY_S = 0.005  # the DSL's default value for wait_for_less_busy_worker
SELECT, PSELECT6 = 23, 270  # x86_64: what IO.select waits in

# A worker's counters are its server thread's (ThreadedUsage): that thread sleeps in select (it hands the
# connection to the pool and selects again; the pool's threads read and answer), so its sleeps are its wakeups,
# but also on Ruby's lock (the GVL) while a pool thread runs: bpftrace saw 21 futex sleeps beside 9 in select
# for 8 connections with --work 2ms, so a verdict reads them as wakeups only where they could all be
# (analysis/wakeups.wakeups_per_connection). It accepts one connection per select: no batches.
PUMA_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        ModeInfo(
            "cluster",
            "Puma's cluster mode: the master's one socket, each worker's server thread waits for it in select()",
            "every Puma worker inherits the master's listening socket and one thread of each waits for it in "
            "select(), which puts a non-exclusive wait entry on it per worker: one connection wakes every idle "
            "worker (a thundering herd), and whoever accepts first serves it",
            None,
            "shared",
            herds=True,
            batches=False,
            switches_are_wakeups=True,
            settings=("wait_for_less_busy_worker: not set (Puma 5.6's default: off)",),
            seen_as=Mechanism.SELECT,
        ),
        ModeInfo(
            "less-busy",
            f"wait_for_less_busy_worker {LESS_BUSY_S}: a worker with a busy thread sleeps before it accepts",
            "as Puma's cluster mode (every worker selects on the shared socket: a herd), but a woken worker "
            f"whose thread pool has a busy thread sleeps up to {LESS_BUSY_S * 1000:g} ms before accepting, so an "
            "idle worker takes the connection first (a sleep sort); an idle server is unchanged",
            None,
            "shared",
            herds=True,
            batches=False,
            switches_are_wakeups=True,
            settings=(f"wait_for_less_busy_worker {LESS_BUSY_S}",),
            seen_as=Mechanism.SELECT,  # the delay is in Ruby, between select and accept: /proc sees the same wait
        ),
    )
}


def forking_worker(master: int) -> int | None:
    """The child of Puma's `master` whose own children are Puma workers (--fork-worker's worker 0: pumactl stats
    names them workers of the master, ps shows them under it); None where the workers are the master's own."""
    from ...probes.proc_processes import children_of, process_info  # here: `modes` and `run` import every kind

    for child in sorted(children_of([master])):
        if any(
            (info := process_info(grand)) is not None and info.name.startswith("puma") for grand in children_of([child])
        ):
            return child
    return None


def puma_missing() -> str | None:
    """Why Puma cannot be launched here, or None."""
    return None if shutil.which("puma") else f"puma is not installed: {PACKAGE}"


# Kept connections (ServerSpec.keepalive): Puma closes one idle for persistent_timeout (20 s), lifted past any
# run's. Its max_fast_inline (10) stays Puma's: after that many requests inline a thread hands its connection
# back to the reactor when others wait for a thread (server.rb), and answers Connection: close when all its
# threads are busy and a new connection waits on the listener (request.rb; the client opens another, as a real
# one does). Lifted, a pool of 16 over 2 workers of 5 threads kept 10 connections in their threads: the other 6
# were answered twice in 4 s (Puma's log), against 3,000 each, and read as a 4 s tail.
KEEPALIVE = "persistent_timeout 86_400\n"


def render_config(spec: ServerSpec, mode: ModeInfo, port: int, directory: str) -> str:
    """puma.rb for one run (Ruby: Puma evaluates it); every path in `directory`."""
    host = f"[{spec.host}]" if ":" in spec.host else spec.host
    less_busy = f"wait_for_less_busy_worker {LESS_BUSY_S}\n" if mode.name == "less-busy" else ""
    kept = KEEPALIVE if spec.keepalive else ""
    cpus = list(spec.cpus)
    return f"""# written by accept-order for one run; removed when it ends
bind "tcp://{host}:{port}?backlog={spec.backlog}"
workers {spec.workers}
threads {THREADS[0]}, {THREADS[1]}
{less_busy}{kept}environment "production"
log_requests true
stdout_redirect "{os.path.join(directory, "puma.log")}", "{os.path.join(directory, "puma.err")}", true
pidfile "{os.path.join(directory, "puma.pid")}"
directory "{directory}"
worker_timeout 30
worker_shutdown_timeout 5
CPUS = {cpus!r}
on_worker_boot do |index|
  # like nginx's worker_cpu_affinity: worker i on CPUS[i % CPUS.size]
  Process.setaffinity(0, [CPUS[index % CPUS.size]]) if !CPUS.empty? && Process.respond_to?(:setaffinity)
end
"""


def in_select(pid: int, tid: int) -> bool:
    """Thread `tid` of `pid` is asleep in select."""
    try:
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            return f.read().split(maxsplit=1)[0] in (str(SELECT), str(PSELECT6))
    except (OSError, IndexError):
        return False


def selecting_thread(pid: int) -> int | None:
    """The worker's thread asleep in select (its server thread, waiting for the listener), or None."""
    return next((tid for tid in thread_ids(pid) if in_select(pid, tid)), None)


class PumaServer(LaunchedServer):
    name = "puma"
    error_logs = ("puma.err", "puma.log", "stderr.log")
    error_marks = ("Errno::", "ERROR", "Error", "error")
    request_log = "puma.log"
    witness_source = "puma request log"  # log_requests, `[PID]` per line in cluster mode
    numbered_by = "socket's own count"  # the app's count of the requests on its connection's socket

    def __init__(self, spec: ServerSpec) -> None:
        super().__init__(spec)
        self.mode = PUMA_MODES[spec.mode]
        self._threads: dict[int, int] = {}  # worker pid -> its server thread

    def command(self) -> list[str]:
        missing = puma_missing()
        if missing:
            raise ServerUnavailable(missing)
        app = write_app(self.spec, self.directory)
        conf = os.path.join(self.directory, "puma.rb")
        with open(conf, "w") as f:
            f.write(render_config(self.spec, self.mode, self.port, self.directory))
        return [shutil.which("puma") or "puma", "--config", conf, app]

    def last_error(self) -> str:
        return ruby_error(super().last_error())

    def ready(self) -> bool:
        """The pid file, the listener, and every worker's server thread in select."""
        import psutil  # here, not at the top: `modes` and `inspect` import every kind

        if self.master is None or not os.path.exists(os.path.join(self.directory, "puma.pid")):
            return False
        try:
            workers = self.workers_of(psutil.Process(self.master.pid))
        except psutil.Error:
            return True  # start() reports the exit
        return all(selecting_thread(pid) for pid in workers) and self.listening(1)

    def start(self) -> None:
        super().start()
        self._threads = {pid: tid for pid in self._pids if (tid := selecting_thread(pid)) is not None}
        self._usage = ThreadedUsage(self._pids, self._threads)

    def settle(self) -> None:
        """Before a sequential connection: every worker's server thread back in select (its main thread
        sleeps throughout, so the base class's check of it would not wait for anything)."""
        if not wait_for(lambda: all(in_select(pid, tid) for pid, tid in self._threads.items()), SETTLE_TIMEOUT_S):
            self._unsettled += 1

    def parse_request(self, fields: list[str]) -> tuple[int, ...] | None:
        """`[PID] ADDR - PID:PORT:N [date] "GET / HTTP/1.0" 200 13 0.0001`: the pid Puma prefixed, the port
        and the request's number on its connection the app handed it."""
        row = parse_common_log(fields)
        prefix = fields[0].strip("[]") if fields else ""
        if row is None or not prefix.isdigit():
            return None
        return (int(prefix), *row[1:])


class PumaKind(ServerKind):
    name = "puma"
    process_names = ("puma",)
    summary = "Debian's Puma (5.6) in cluster mode with a Rack app, launched from a generated config"
    # and Ruby's lock: bpftrace saw 21 futex sleeps beside 9 in select for 8 connections with --work 2ms
    sleeps = "each worker's server thread alone, the one in select: its wakeups, and its waits for Ruby's lock (GVL)"
    # the thread that selects on the listener and accepts (Server#run's); its reactor's epoll never has it
    listener_threads = ("puma srv",)
    launched_pool = (
        f"Puma's pool of up to {THREADS[1]} threads in each, 'threads {THREADS[0]}, {THREADS[1]}' in the config "
        "this tool wrote"
    )
    witness = PumaServer.witness_source
    preferred_mode = "cluster"
    pool_setting = "Puma's pool, sized by 'threads MIN, MAX' in its config or -t MIN:MAX"  # attached: not the tool's
    one_lock = "Ruby's GVL"

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import ClientLimit, IdleLimit, LongLivedCure, SideBySide

        return (
            LongLivedCure(
                "max_fast_inline 10",
                redraws(
                    "after this many requests on a connection (10 by default), a worker whose threads are all "
                    "busy while another connection waits on the listener answers with Connection: close "
                    "(puma/request.rb)"
                ),
                ClientLimit("max_fast_inline", requests=10),
            ),
            LongLivedCure("persistent_timeout 20", f"{IDLE_CLOSE} (20 s by default)", IdleLimit("persistent_timeout")),
            LongLivedCure(
                "wait_for_less_busy_worker 0.005",
                "a worker with a busy thread waits up to 5 ms before it accepts, so an idle worker takes a new "
                "connection first: it moves reopened connections under load, not a pool opened at idle",
                SideBySide(("cluster", "less-busy")),
                "less-busy",
            ),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return PUMA_MODES

    def why_of(self, mode: ModeInfo, argv: Sequence[str], pid: int | None = None) -> str:
        """The mode's sentence, and where a worker of the master (`pid`) has Puma workers of its own, that they were
        forked from it (--fork-worker: its title rewritten, the flag is not in /proc, the process tree shows it)."""
        first = forking_worker(pid) if pid is not None else None
        if first is None:
            return mode.why
        return (
            f"{mode.why}; here with --fork-worker: the other workers were forked from worker 0 (pid {first}), "
            "which serves too, and inherited the socket from it (a refork replaces them with new children of it)"
        )

    def missing(self) -> str | None:
        return puma_missing()

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.accept_batch not in (0, 1):
            raise PlanError("--accept-batch does not apply to puma: it accepts one connection per select")

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return PumaServer(spec)
