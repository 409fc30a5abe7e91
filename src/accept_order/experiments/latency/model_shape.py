"""The latency model as a result file holds it (analysis/model_check.ModelCheck), with what its type hints do not
say: the busy looks behind its service source (analysis/busy_choice.py) add up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...analysis.model_check import ModelCheck
from ...results.schema import Maybe, Number, SchemaError, child, derive


def _slept_within_busy(model: Mapping[str, Any], at: str) -> None:
    """The busy looks found asleep are some of the busy looks: more, and the report's interval of their share
    (busy_choice.wilson) stopped 'show' with 'math domain error'."""
    slept, busy = model.get("slept_looks"), model.get("busy_looks")
    if isinstance(slept, int) and isinstance(busy, int) and slept > busy:
        raise SchemaError(child(at, "slept_looks"), f"is {slept}, more than its {busy} busy looks")


# the shares of the busy time asleep are shares: a file's 7.5 read '750% of the busy time'
MODEL_SHAPE = Maybe(
    derive(
        ModelCheck,
        slept_share=Maybe(Number(0.0, 1.0)),
        busy_waited=Maybe(Number(0.0, 1.0)),
        rules=(_slept_within_busy,),
    )
)
