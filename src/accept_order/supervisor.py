"""Start workers in index order, wait for each to be ready, watch them, stop them, collect counters.

`WorkerPool` is the owner of every worker process: leaving its `with` block ends them all, whether the
block finished, raised, or was interrupted by Ctrl-C or SIGTERM. Workers also die with the supervisor
(PR_SET_PDEATHSIG), for the case where the supervisor itself is killed.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from multiprocessing.connection import Connection, wait
from types import TracebackType
from typing import Any

import psutil

from .errors import WorkerError
from .modes import Listeners, Mode, require_mode
from .processes import end_processes
from .records import Plan, WorkerCounters
from .worker import BUSY, WAITING, WorkerConfig, worker_main

READY_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 3.0

_ctx = mp.get_context("fork")  # the listening socket and a shared epoll are inherited, as in a real server


class WorkerPool:
    def __init__(self, plan: Plan, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        self.plan = plan
        self.mode: Mode = require_mode(plan.mode)
        self.ready_timeout_s = ready_timeout_s
        self.procs: list[Any] = []
        self.pipes: list[Connection] = []
        self.pids: list[int] = []
        self.affinity: list[tuple[int, ...]] = []
        self.port = 0
        self._state: Any = None
        self._before: dict[int, tuple[int, int, float]] = {}
        self._counters: list[WorkerCounters] | None = None
        self.unsettled = 0
        self.died: list[int] = []  # workers that ended before stop() told them to (found by stop)

    # -- start ---------------------------------------------------------------------------------
    def __enter__(self) -> WorkerPool:
        try:
            self.start()
        except BaseException:
            self.kill()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._counters is None and exc_type is None:
            self.stop()
        self.kill()

    def start(self) -> None:
        plan = self.plan
        listeners: Listeners = self.mode.open(plan.host, plan.port, plan.backlog, plan.workers)
        self.port = listeners.port
        self._state = _ctx.RawArray("b", plan.workers)
        try:
            for index in range(plan.workers):
                self._start_one(index, listeners)
        finally:
            # The workers hold their own references; the parent keeps none, so a dead reuseport
            # worker's queue leaves the group instead of silently swallowing connections.
            listeners.close()
        self._before = {i: self._usage(i) for i in range(plan.workers)}

    def _start_one(self, index: int, listeners: Listeners) -> None:
        plan = self.plan
        receiver, sender = _ctx.Pipe(duplex=False)
        cfg = WorkerConfig(
            index, self.mode, listeners, plan.accept_batch, plan.work_us, plan.work_iters, plan.cpus
        )
        proc = _ctx.Process(target=worker_main, args=(cfg, sender, self._state), name=f"worker-{index}")
        self.procs.append(proc)  # before start(): an interrupt right after it must not orphan the child
        self.pipes.append(receiver)
        proc.start()
        sender.close()
        # Wait for this worker's ready before starting the next: registration order is worker order.
        ready = wait([receiver, proc.sentinel], timeout=self.ready_timeout_s)
        if receiver in ready:
            try:
                kind, info = receiver.recv()
            except EOFError:
                kind, info = "eof", {}
            if kind == "ready":
                self.pids.append(info["pid"])
                self.affinity.append(tuple(info["affinity"]))
                # "ready" is sent just before the worker's first wait call: let it fall asleep there
                # before the next one starts, so workers first wait in index order (which worker a
                # LIFO epoll or a FIFO accept queue picks first depends on it). Best effort only.
                self._wait_settled(index, self.ready_timeout_s)
                return
            if kind == "failed":
                raise WorkerError(f"worker {index} could not start: {info}", index)
        proc.join(0.2)
        if proc.exitcode is not None:
            raise WorkerError(f"worker {index} exited with code {proc.exitcode} before it was ready", index)
        raise WorkerError(f"worker {index} did not become ready within {self.ready_timeout_s:g} s", index)

    @property
    def address(self) -> tuple[str, int]:
        return (self.plan.host, self.port)

    # -- while running -------------------------------------------------------------------------
    def check_alive(self) -> None:
        for index, proc in enumerate(self.procs):
            if not proc.is_alive():
                raise WorkerError(
                    f"worker {index} (pid {proc.pid}) died with exit code {proc.exitcode}", index
                )

    def settle(self, timeout_s: float = 2.0) -> bool:
        """Wait until every worker is busy or asleep in its wait call; False if that took too long.

        A worker that has just answered may not be back in accept()/epoll_wait yet, and one woken by a
        herd may not have gone back to sleep: the next connection would then see a different set of
        waiters than an idle server has. The seed's by-hand nc loop had human-sized gaps for that.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            if all(self._settled(i) for i in range(len(self.procs))):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0002)

    def _wait_settled(self, index: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while not self._settled(index):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0002)
        return True

    def _settled(self, index: int) -> bool:
        state = self._state[index]
        if state == BUSY:
            return True
        if state != WAITING:
            return False
        try:
            with open(f"/proc/{self.pids[index]}/stat") as f:
                return f.read().rpartition(")")[2].split()[0] == "S"
        except OSError:
            return True  # no /proc (not Linux) or the worker is gone: check_alive reports the latter

    def wait_for_death(self) -> None:
        """Block until some worker dies, then raise WorkerError naming it (Ctrl-C interrupts the wait)."""
        while True:
            wait([p.sentinel for p in self.procs])
            self.check_alive()

    def between_connections(self) -> None:
        """Called by the driver before each connection."""
        self.check_alive()
        if self.plan.settle and not self.settle():
            self.unsettled += 1

    # -- stop ----------------------------------------------------------------------------------
    def _usage(self, index: int) -> tuple[int, int, float]:
        try:
            p = psutil.Process(self.pids[index])
            switches = p.num_ctx_switches()
            cpu = p.cpu_times()
            return switches.voluntary, switches.involuntary, cpu.user + cpu.system
        except (psutil.Error, IndexError):
            return (0, 0, 0.0)

    def stop(self) -> list[WorkerCounters]:
        """Read the kernel's usage deltas, tell workers to stop, collect what each counted."""
        after = {i: self._usage(i) for i in range(len(self.pids))}
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        reports: dict[int, dict[str, Any]] = {}
        for index, pipe in enumerate(self.pipes):
            remaining = max(0.0, deadline - time.monotonic())
            try:
                if pipe.poll(remaining):
                    kind, info = pipe.recv()
                    if kind == "counters":
                        reports[index] = info
            except EOFError:
                # Closed without a report: the worker had already ended (it died, e.g. right after
                # failing a connection) before it was told to stop; check_alive may have missed it.
                self.died.append(index)
            except OSError:
                pass
        counters = []
        for index, pid in enumerate(self.pids):
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
        self.kill()
        return counters

    def check_stopped(self) -> None:
        """After stop(): raise WorkerError naming the first worker that had died before it."""
        for index in self.died:
            proc = self.procs[index]
            raise WorkerError(f"worker {index} (pid {proc.pid}) died with exit code {proc.exitcode}", index)

    def kill(self) -> None:
        """End every worker still alive (SIGTERM, then SIGKILL) and reap it, with anything it started."""
        strays: list[psutil.Process] = []
        for proc in self.procs:
            try:
                if proc.pid is not None and proc.is_alive():
                    strays.extend(psutil.Process(proc.pid).children(recursive=True))
            except (psutil.Error, ValueError):
                pass
        end_processes(self.procs, STOP_TIMEOUT_S)
        for p in strays:
            try:
                p.kill()
            except psutil.Error:
                pass
        for pipe in self.pipes:
            pipe.close()
        self.pipes = []
