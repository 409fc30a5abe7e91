"""run_each (experiments/partial.py) with keep_on_error, as a sweep runs its caps: what an error after a variant
keeps."""

from __future__ import annotations

import pytest

from accept_order.core.errors import WorkerExited
from accept_order.experiments.partial import RunStopped, run_each


def test_a_worker_exit_after_a_variant_keeps_the_run_it_stopped() -> None:
    """run_each with keep_on_error (a sweep's caps): an attached server's worker exit in the second variant ends
    the run with RunStopped holding the first variant's result and the second's partial one, which the exit
    carries (nothing measured is lost)."""

    def run_one(variant: str) -> str:
        if variant == "second":
            exited = WorkerExited("worker 1 exited")
            exited.results = ["second, partial"]
            raise exited
        return variant

    with pytest.raises(RunStopped) as stopped:
        run_each(["first", "second", "third"], run_one, keep_on_error=True)
    assert stopped.value.results == ["first", "second, partial"]
    assert isinstance(stopped.value.cause, WorkerExited)
