"""Errors the harness raises on purpose. The CLI maps each to one line on stderr and an exit code."""

from __future__ import annotations


class AcceptOrderError(Exception):
    """Base class: a failure the user should read as one clear line."""

    exit_code = 1


class PlanError(AcceptOrderError):
    """The request itself is wrong (bad value, unknown mode, unsupported here): a usage error."""

    exit_code = 2


class ModeUnavailable(PlanError):
    """The platform lacks what the mode needs (e.g. EPOLLEXCLUSIVE off Linux)."""


class ListenError(AcceptOrderError):
    """The listening socket could not be set up (port in use, permission, bad address)."""


class WorkerError(AcceptOrderError):
    """A worker died, or never became ready."""

    def __init__(self, message: str, index: int | None = None) -> None:
        super().__init__(message)
        self.index = index


class ResultFileError(AcceptOrderError):
    """A results file could not be read or is not an accept-order result."""
