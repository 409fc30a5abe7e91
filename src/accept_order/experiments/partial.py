"""What a run that did not reach its end carries to the command, so that what it measured is not lost: a signal
(RunInterrupted: the command then exits 130/143/129) or an error after something was measured (RunStopped: exit
1). Either way the command saves and reports `results` first, then ends with the signal's status or the error's
one line. `run_each` runs variants one after another and keeps the finished ones on either path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..core.errors import AcceptOrderError
from ..core.status import ExitStatus

T = TypeVar("T")
R = TypeVar("R")


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a load that keeps partial results: `results` holds every result that
    was measured (the last one marked interrupted), `cause` the signal's exception."""

    def __init__(self, results: Sequence[Any], cause: KeyboardInterrupt) -> None:
        super().__init__()
        self.results = list(results)
        self.cause = cause


class RunStopped(AcceptOrderError):
    """An error (a LoadError: a client host lost, a driver that could not start; a worker that died) ended a
    run of several loads after some were measured: `results` holds those (a burst's sizes, a ramp's steps, a
    sweep's caps so far), `cause` the error. Its line is the cause's; its status 1 whatever the cause's (a run
    that measured something and then could not go on is a runtime failure, not a usage error)."""

    exit_code = ExitStatus.ERROR

    def __init__(self, results: Sequence[Any], cause: AcceptOrderError) -> None:
        super().__init__(str(cause))
        self.results = list(results)
        self.cause = cause


def run_each(variants: Sequence[T], run_one: Callable[[T], R], keep_on_error: bool = False) -> list[R]:
    """Run every variant, one after another. Interrupted, the results so far travel with RunInterrupted
    (a partial last run included when its load kept one). With `keep_on_error`, an AcceptOrderError after a
    variant finished travels as RunStopped with the results so far (a partial last one when it kept one)."""
    results: list[R] = []
    for variant in variants:
        try:
            results.append(run_one(variant))
        except RunInterrupted as stop:
            raise RunInterrupted([*results, *stop.results], stop.cause) from None
        except KeyboardInterrupt as cause:
            if not results:
                raise
            raise RunInterrupted(results, cause) from None
        except RunStopped as stop:
            raise RunStopped([*results, *stop.results], stop.cause) from stop.cause
        except AcceptOrderError as cause:
            if not results or not keep_on_error:
                raise
            # a WorkerExited carries the run it stopped (marked interrupted): kept after the finished ones
            raise RunStopped([*results, *getattr(cause, "results", ())], cause) from cause
    return results
