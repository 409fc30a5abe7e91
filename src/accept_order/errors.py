"""Errors the harness raises on purpose. The CLI maps each to one line on stderr and its exit status."""

from __future__ import annotations

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


class ListenError(AcceptOrderError):
    """The listening socket could not be set up (port in use, permission, bad address)."""


class WorkerError(AcceptOrderError):
    """A worker died, or never became ready."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class LoadError(AcceptOrderError):
    """The load generator itself failed (a driver process died or never started)."""


class ResourceError(AcceptOrderError):
    """The machine ran out of something the run needs: file descriptors, processes, memory."""


class ResultFileError(AcceptOrderError):
    """A results file could not be read or written, or is not an accept-order result."""


class NotServing(AcceptOrderError):
    """What `inspect` was pointed at serves nothing: no such process, no listener, nobody on that port."""
