"""The built-in server: Python worker processes accepting the chosen mode's way. A `Target`.

`WorkerPool` is the owner of every worker process: leaving its `with` block ends them all, whether the
block finished, raised, or was interrupted by Ctrl-C or SIGTERM. Workers also die with the supervisor
(PR_SET_PDEATHSIG), for the case where the supervisor itself is killed. Workers are forked together and
register their waits one after another, each only once the previous one is asleep in its wait call, so the
wait-queue order is index order.
"""

from __future__ import annotations

import os
import time
from types import TracebackType
from typing import Any

from ..core import forked
from ..core.errors import WorkerError
from ..core.forked import Connection, ForkedProcess, wait
from ..core.measures import WorkerCounters
from ..core.processes import (
    READY_TIMEOUT_S,
    STOP_TIMEOUT_S,
    end_processes,
    has_children,
    open_pidfd,
    out_of_resources,
    process_errors,
    start_child,
)
from ..core.protocol import KEEP_LINE, LINE, ClientProtocol
from ..core.spec import ServerSpec
from ..core.started import Started
from ..core.target import ReplyAttribution
from ..core.waiting import wait_for
from .helper_process import HelperProcess, usage_of
from .modes import Listeners, Mode, require_mode
from .modes.base import ModeOptions
from .worker import (
    BUSY,
    WAITING,
    WorkerConfig,
    accepts_slot,
    leave_slot,
    parse_fault,
    shared_slots,
    worker_main,
)

SETTLE_TIMEOUT_S = 2.0
RESEND_S = 0.25  # how long a worker has to report before it is told again


class WorkerPool(Started):
    def __init__(self, spec: ServerSpec, ready_timeout_s: float = READY_TIMEOUT_S, stamps: bool = False) -> None:
        self.spec = spec
        self.keep_stamps = stamps
        self.stamps: dict[int, list[int]] = {}  # worker index -> its accept times (monotonic ns)
        self.mode: Mode = require_mode(spec.mode)
        self.ready_timeout_s = ready_timeout_s
        self.procs: list[ForkedProcess] = []
        self.pipes: list[Connection] = []
        self._pids: list[int] = []
        self._pidfds: list[int] = []
        self.affinity: list[tuple[int, ...]] = []
        self.port = 0
        self._state: Any = None
        self._before: dict[int, tuple[int, int, float]] = {}
        self._counters: list[WorkerCounters] | None = None
        self._unsettled = 0
        self.died: list[int] = []  # workers that ended before stop() told them to (found by stop)
        self.retired: dict[int, str] = {}  # workers made to go mid-run (reload): index -> "left" or "killed"
        self._last_usage: dict[int, tuple[int, int, float]] = {}  # a retired worker's usage as it went
        self._listeners: Listeners | None = None
        self._turns: list[int] = []  # per worker, until its turn is given: the pipe end that gives it
        self.helper = HelperProcess()  # a mode's own process besides the workers (fd-pass's acceptor)

    # -- the Target interface -------------------------------------------------------------------
    @property
    def address(self) -> tuple[str, int]:
        return (self.spec.host, self.port)

    @property
    def pids(self) -> list[int]:
        return self._pids

    @property
    def attribution(self) -> ReplyAttribution:
        return ReplyAttribution(tuple(self._pids))

    @property
    def protocol(self) -> ClientProtocol:
        # A built-in worker writes its line and closes, like the seed's servers; kept, it answers a line per
        # request line (servers/keepalive.py).
        return KEEP_LINE if self.spec.keepalive else LINE

    @property
    def unsettled(self) -> int:
        return self._unsettled

    def death_fds(self) -> list[int]:
        fds = [fd for i, fd in enumerate(self._pidfds) if i not in self.retired]
        return fds + ([self.helper.pidfd] if self.helper.pidfd is not None else [])

    # -- start ---------------------------------------------------------------------------------
    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._counters is None and exc_type is None:
            self.stop()
        self.close()

    def start(self) -> None:
        spec = self.spec
        parse_fault()  # a malformed test hook is a usage error before anything starts
        options = ModeOptions(policy=spec.policy, mutex_delay_ms=spec.mutex_delay_ms)
        listeners: Listeners = self.mode.open(spec.host, spec.port, spec.listen_backlog, spec.workers, options)
        self._listeners = listeners
        self.port = listeners.port
        try:
            slots = shared_slots(spec.workers)
            self._state = out_of_resources("the workers' shared state", lambda: forked.shared_int64s(slots))
            # Every worker is forked at once and waits, set up, for its turn to register; turns are given in
            # index order, each once the worker before is asleep in its wait: registration order is worker order,
            # while the forks and each child's own start overlap the waits (issue 30: 3 workers' start-up).
            for index in range(spec.workers):
                self._fork_one(index, listeners)
                if index == 0:
                    self._give_turn(0)  # no worker waits before it: it registers while the others are forked
            for index in range(spec.workers):
                self._register_one(index)
            factory = listeners.acceptor()
            if factory is not None:
                self.helper.start(factory, self._state, self.ready_timeout_s)
        finally:
            # The workers hold their own references; the parent keeps none, so a dead reuseport
            # worker's queue leaves the group instead of silently swallowing connections.
            listeners.close()
        self._before = {i: self._usage(i) for i in range(spec.workers)}

    def _fork_one(self, index: int, listeners: Listeners) -> None:
        spec = self.spec
        receiver, sender = out_of_resources(f"worker {index}", forked.pipe)
        turn, give = out_of_resources(f"worker {index}", os.pipe)  # one byte on it: the worker's turn to register
        cfg = WorkerConfig(
            index,
            self.mode,
            listeners,
            spec.accept_batch,
            spec.work_us,
            spec.work_iters,
            spec.cpus,
            self.keep_stamps,
            spec.keepalive,
        )
        self._turns.append(give)
        # The child closes the giving ends it inherits (its own, its elder siblings'): a turn pipe the pool closes
        # without a byte must read end of file, whichever worker still runs.
        giving = [end for end in self._turns if end >= 0]  # turns given are closed already
        proc = ForkedProcess(worker_main, (cfg, sender, self._state, turn, giving), f"worker-{index}")
        self.procs.append(proc)  # before start(): an interrupt right after it must not orphan the child
        self.pipes.append(receiver)
        try:
            out_of_resources(f"worker {index}", lambda: start_child(proc))
        finally:
            sender.close()
            os.close(turn)

    def _give_turn(self, index: int) -> None:
        """Let worker `index` register its wait (once: a turn given is closed)."""
        give, self._turns[index] = self._turns[index], -1
        if give < 0:
            return
        try:
            os.write(give, b"r")
        except OSError:
            pass  # it ended before its turn: its report ("failed") or its sentinel says why (_register_one)
        finally:
            os.close(give)

    def _register_one(self, index: int) -> None:
        """Give worker `index` its turn, and wait until it is ready and asleep in its wait call."""
        proc, receiver = self.procs[index], self.pipes[index]
        self._give_turn(index)
        ready = wait([receiver, proc.sentinel], timeout=self.ready_timeout_s)
        if receiver in ready:
            try:
                kind, info = receiver.recv()
            except EOFError:
                kind, info = "eof", {}
            if kind == "ready":
                self._pids.append(info["pid"])
                self.affinity.append(tuple(info["affinity"]))
                pidfd = open_pidfd(info["pid"])  # check_alive still catches a death without one
                if pidfd is not None:
                    self._pidfds.append(pidfd)
                # "ready" is sent just before the worker's first wait call: let it fall asleep there
                # before the next one starts, so workers first wait in index order (which worker a
                # LIFO epoll or a FIFO accept queue picks first depends on it). Best effort only.
                wait_for(lambda: self._settled(index), self.ready_timeout_s)
                return
            if kind == "failed":
                raise WorkerError(f"worker {index} could not start: {info}", index)
        proc.join(0.2)
        if proc.exitcode is not None:
            raise WorkerError(f"worker {index} exited with code {proc.exitcode} before it was ready", index)
        raise WorkerError(f"worker {index} did not become ready within {self.ready_timeout_s:g} s", index)

    # -- while running -------------------------------------------------------------------------
    def check_alive(self) -> None:
        for index, proc in enumerate(self.procs):
            if index not in self.retired and (proc.exitcode is not None or not proc.is_alive()):
                raise WorkerError(f"worker {index} (pid {proc.pid}) died with exit code {proc.exitcode}", index)
        self.helper.check_alive()

    def retire(self, index: int, how: str, timeout_s: float = STOP_TIMEOUT_S) -> bool:
        """Make worker `index` go mid-run, as in a reload: "leave" (close its listener, serve what it holds,
        exit: a graceful restart) or "kill" (SIGKILL). True once it is gone within `timeout_s`; a leaving
        worker notices between connections, so one nothing wakes may take the whole timeout."""
        proc = self.procs[index]
        self._last_usage[index] = self._usage(index)
        self.retired[index] = "left" if how == "leave" else "killed"
        if how == "kill":
            proc.kill()
        else:
            self._state[leave_slot(self._state, index)] = 1
        proc.join(timeout_s)  # a lock it held (accept-mutex) the kernel frees when it dies
        return proc.exitcode is not None

    def settle(self) -> None:
        """Wait until every worker is busy or asleep in its wait call; count it when that took too long.

        A worker that has just answered may not be back in accept()/epoll_wait yet, and one woken by a
        herd may not have gone back to sleep: the next connection would then see a different set of
        waiters than an idle server has. The seed's by-hand nc loop had human-sized gaps for that.
        """
        if not wait_for(lambda: all(self._settled(i) for i in range(len(self.procs))), SETTLE_TIMEOUT_S):
            self._unsettled += 1

    def _settled(self, index: int) -> bool:
        state = self._state[index]
        if state == BUSY:
            return True
        if state != WAITING:
            return False
        try:
            with open(f"/proc/{self._pids[index]}/stat") as f:
                return f.read().rpartition(")")[2].split()[0] == "S"
        except OSError:
            return True  # no /proc (not Linux) or the worker is gone: check_alive reports the latter

    def accepted_so_far(self) -> int:
        """Connections the workers have accepted until now (each publishes its count in shared memory)."""
        return sum(self.accepted_by(i) for i in range(len(self.procs)))

    def accepted_by(self, index: int) -> int:
        """Connections worker `index` has accepted so far, as it last published (frozen once it is dead)."""
        return int(self._state[accepts_slot(self._state, index)]) if self._state is not None else 0

    def wait_for_death(self) -> None:
        """Block until some worker dies, then raise WorkerError naming it (Ctrl-C interrupts the wait)."""
        while True:
            helper = [self.helper.proc.sentinel] if self.helper.proc is not None else []
            wait([p.sentinel for i, p in enumerate(self.procs) if i not in self.retired] + helper)
            self.check_alive()

    # -- stop ----------------------------------------------------------------------------------
    def _usage(self, index: int) -> tuple[int, int, float]:
        if index in self._last_usage:
            return self._last_usage[index]  # retired: what it had used when it was told to go
        return usage_of(self._pids[index]) if index < len(self._pids) else (0, 0, 0.0)

    def stop(self) -> list[WorkerCounters]:
        """Read the kernel's usage deltas, tell workers to stop, collect what each counted."""
        after = {i: self._usage(i) for i in range(len(self._pids))}
        helper_after = self.helper.usage_now()
        self._asking_to_stop()
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
        self.helper.stop(helper_after)
        reports: dict[int, dict[str, Any]] = {}
        pending = dict(enumerate(self.pipes))
        # Each worker reports once, when told to stop; read the reports as they come, all within the
        # same deadline (one slow worker must not hold up reading the others).
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready = wait(list(pending.values()), timeout=min(RESEND_S, left))
            if not ready:
                # A SIGTERM that lands just before a blocking accept() is noted but never handled (the
                # handler runs only when the call returns): send it again to those that have not reported.
                for index in pending:
                    if self.procs[index].is_alive():
                        self.procs[index].terminate()
                continue
            for index, pipe in list(pending.items()):
                if pipe not in ready:
                    continue
                del pending[index]
                try:
                    kind, info = pipe.recv()
                    if kind == "counters":
                        self.stamps[index] = info.pop("stamps", [])
                        reports[index] = info
                except EOFError:
                    # Closed without a report: the worker had already ended (it died, e.g. right after
                    # failing a connection) before it was told to stop; check_alive may have missed it.
                    if index not in self.retired:
                        self.died.append(index)
                except OSError:
                    pass
        counters = []
        for index, pid in enumerate(self._pids):
            info = reports.get(index, {"index": index, "pid": pid})
            b, a = self._before.get(index, (0, 0, 0.0)), after[index]
            counters.append(
                WorkerCounters(
                    **info,
                    voluntary_switches=a[0] - b[0],
                    involuntary_switches=a[1] - b[1],
                    cpu_s=round(a[2] - b[2], 6),
                    affinity=self.affinity[index],
                )
            )
        self._counters = counters
        self.close()
        return counters

    def own_evidence(self) -> dict[str, Any]:
        """The acceptor's report (fd-pass), for the run's evidence."""
        extra: dict[str, Any] = {}
        if self.helper.report is not None:
            extra["acceptor"] = self.helper.report
        return extra

    def sequence(self) -> list[int]:
        """After stop(): which worker accepted each connection, in order of accept time (serve's sequence)."""
        stamped = sorted((t, index) for index, times in self.stamps.items() for t in times)
        return [index for _, index in stamped]

    def _asking_to_stop(self) -> None:
        """Workers obey SIGTERM only after this: a SIGTERM to the whole process group is ours to act on."""
        if self._state is not None:
            self._state[len(self._state) - 1] = 1

    def check_stopped(self) -> None:
        """After stop(): raise WorkerError naming the first worker that had died before it."""
        for index in sorted(self.died):
            proc = self.procs[index]
            raise WorkerError(f"worker {index} (pid {proc.pid}) died with exit code {proc.exitcode}", index)

    def close(self) -> None:
        """End every worker still alive (SIGTERM, then SIGKILL) and reap it, with anything it started."""
        strays: list[Any] = []  # psutil.Process objects: psutil is imported only if a worker has children
        for proc in self.procs:
            try:
                if proc.pid is not None and proc.exitcode is None and has_children(proc.pid):
                    import psutil

                    strays.extend(psutil.Process(proc.pid).children(recursive=True))
            except process_errors(ValueError):
                pass
        self._asking_to_stop()
        end_processes(self.procs, STOP_TIMEOUT_S)
        self.helper.close()  # fd-pass's acceptor, on every path (the workers first: they may be mid-reply)
        for p in strays:
            try:
                p.kill()
            except process_errors():
                pass
        for pipe in self.pipes:
            pipe.close()
        self.pipes = []
        for give in self._turns:
            if give >= 0:
                os.close(give)
        self._turns = []
        for fd in self._pidfds:
            os.close(fd)
        self._pidfds = []
