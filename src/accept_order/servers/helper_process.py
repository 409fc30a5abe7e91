"""The owner of a mode's own process besides the workers (fd-pass's acceptor), for the pool.

It starts after the workers (so it inherits what they were given and closes what is theirs), reports
ready like a worker, and when stopped reports what it did; its CPU and context switches are read from the
kernel like the workers', because what it costs is part of what the mode costs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.errors import WorkerError
from ..core.forked import Connection, ForkedProcess, pipe, wait
from ..core.processes import (
    STOP_TIMEOUT_S,
    end_processes,
    open_pidfd,
    out_of_resources,
    process_errors,
    start_child,
    usage,
)
from .modes.base import Helper
from .worker import helper_main

Usage = tuple[int, int, float]


def usage_of(pid: int) -> Usage:
    try:
        return usage(pid)
    except process_errors(ValueError, IndexError):
        return (0, 0, 0.0)


class HelperProcess:
    def __init__(self, name: str = "acceptor") -> None:
        self.name = name
        self.proc: ForkedProcess | None = None
        self.pipe: Connection | None = None
        self.pidfd: int | None = None
        self._before: Usage = (0, 0, 0.0)
        self.report: dict[str, Any] | None = None

    def start(self, factory: Callable[[], Helper], state: Any, ready_timeout_s: float) -> None:
        receiver, sender = out_of_resources(f"the {self.name}", pipe)
        proc = ForkedProcess(helper_main, (factory, sender, state), self.name)
        self.proc, self.pipe = proc, receiver  # before start(): an interrupt right after must not orphan it
        out_of_resources(f"the {self.name}", lambda: start_child(proc))
        sender.close()
        if receiver in wait([receiver, proc.sentinel], timeout=ready_timeout_s):
            try:
                kind, info = receiver.recv()
            except EOFError:
                kind, info = "eof", {}
            if kind == "ready":
                self.pidfd = open_pidfd(info["pid"])
                self._before = usage_of(info["pid"])
                return
            if kind == "failed":
                raise WorkerError(f"the {self.name} could not start: {info}")
        proc.join(0.2)
        if proc.exitcode is not None:
            raise WorkerError(f"the {self.name} exited with code {proc.exitcode} before it was ready")
        raise WorkerError(f"the {self.name} did not become ready within {ready_timeout_s:g} s")

    def check_alive(self) -> None:
        if self.proc is not None and not self.proc.is_alive():
            raise WorkerError(f"the {self.name} (pid {self.proc.pid}) died with exit code {self.proc.exitcode}")

    def usage_now(self) -> Usage | None:
        return usage_of(self.proc.pid) if self.proc is not None and self.proc.pid is not None else None

    def stop(self, after: Usage | None) -> None:
        """Tell it to stop (the pool has set the shared stop flag) and keep its report with its usage."""
        proc, pipe = self.proc, self.pipe
        if proc is None:
            return
        report: dict[str, Any] = {}
        if proc.is_alive():
            proc.terminate()
        if pipe is not None and pipe.poll(STOP_TIMEOUT_S):
            try:
                kind, info = pipe.recv()
                if kind == "counters":
                    report = info
            except (EOFError, OSError):
                pass
        b, a = self._before, after or (0, 0, 0.0)
        self.report = {
            "pid": proc.pid,
            **report,
            "voluntary_switches": a[0] - b[0],
            "involuntary_switches": a[1] - b[1],
            "cpu_s": round(a[2] - b[2], 6),
        }

    def close(self) -> None:
        """End it if it is still alive (SIGTERM, then SIGKILL), reap it, close its pipe and pidfd."""
        if self.proc is not None:
            end_processes([self.proc], STOP_TIMEOUT_S)
        if self.pipe is not None:
            self.pipe.close()
            self.pipe = None
        if self.pidfd is not None:
            import os

            os.close(self.pidfd)
            self.pidfd = None
