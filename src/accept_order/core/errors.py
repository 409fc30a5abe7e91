"""Errors the harness raises on purpose. The CLI maps each to one line on stderr and its exit status."""

from __future__ import annotations

from typing import Any

from .status import ExitStatus


class AcceptOrderError(Exception):
    """Base class: a failure the user should read as one clear line."""

    exit_code: int = ExitStatus.ERROR


class PlanError(AcceptOrderError):
    """The request itself is wrong (bad value, unknown mode, unsupported here): a usage error."""

    exit_code = ExitStatus.USAGE


class ModeUnavailable(PlanError):
    """The platform lacks what the mode needs (e.g. EPOLLEXCLUSIVE off Linux)."""


class ServerUnavailable(AcceptOrderError):
    """The server this run asks for is not installed here (a runtime problem: exit 1)."""


class NothingToRun(AcceptOrderError):
    """Every variant a several-mode command asked for was left out (a mode the server lacks, or one this
    machine cannot run): a run that would run nothing fails, before anything starts."""


class ListenError(AcceptOrderError):
    """The listening socket could not be set up (port in use, permission, bad address)."""


class WorkerError(AcceptOrderError):
    """A worker died, or never became ready."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class WorkerExited(WorkerError):
    """A worker of a server this tool did not start exited during the run: the server's affair, not a
    failure of the measurement, so what was measured until then is kept. The session puts that partial
    result in `results` for the command to report and save before it ends with this one line."""

    def __init__(self, message: str, index: int | None = None, after_s: float | None = None) -> None:
        super().__init__(message, index)
        self.after_s = after_s  # seconds into the run when the exit was seen
        self.results: list[Any] = []


class LoadError(AcceptOrderError):
    """The load generator itself failed (a driver process died or never started)."""


class NothingServed(AcceptOrderError):
    """A run served no request at all: its report and file say why each failed, and the command fails
    (exit 1) rather than pass an empty histogram off as a measurement."""


class ResourceError(AcceptOrderError):
    """The machine ran out of something the run needs: file descriptors, processes, memory."""


class ResultFileError(AcceptOrderError):
    """A results file could not be read or written, or is not an accept-order result."""


class OutputError(AcceptOrderError):
    """stdout could not take the report: closed, a full disk. `broken_pipe`: its reader went away (EPIPE),
    which is how `| head` ends a command, not an error: the CLI then exits quietly (status 141)."""

    def __init__(self, message: str, broken_pipe: bool = False) -> None:
        super().__init__(message)
        self.broken_pipe = broken_pipe


class NotServing(AcceptOrderError):
    """What `inspect` or `observe` was pointed at serves nothing: no such process, no listener, nobody on
    that port."""
