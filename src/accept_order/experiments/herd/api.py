"""The herd experiment's Python API."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from ...core.measures import ConnectionRecord
from ...core.spec import SequentialLoad, ServerSpec
from ..order.api import compare
from .result import HerdResult


def herd(
    server: ServerSpec,
    load: SequentialLoad,
    modes: Sequence[str],
    on_record: Callable[[ConnectionRecord], None] | None = None,
) -> HerdResult:
    """Every mode with the same workers and connections, one at a time (gap 0) and settled, so each
    connection meets every worker idle and asleep: how many does it wake?"""
    load = dataclasses.replace(load, settle=True, gap_ms=0.0)
    runs, skipped = compare(server, load, modes, on_record)
    return HerdResult(server.workers, load.connections, server.work_us, server.listen_backlog, tuple(runs), skipped)
