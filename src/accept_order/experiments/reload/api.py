"""The reload experiment's Python API."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...core.spec import ConcurrentLoad, ServerSpec
from ..session import Tick
from .result import ReloadRun
from .run import ReloadPlan, reload_runs


def reload(
    variants: Sequence[tuple[ServerSpec, ReloadPlan]],
    load: ConcurrentLoad,
    on_run: Callable[[ServerSpec, ReloadPlan], Tick | None] | None = None,
) -> list[ReloadRun]:
    """One worker made to go mid-load, per (spec, plan). Run it inside the private network namespace
    (netns.enter_private): it sets net.ipv4.tcp_migrate_req there."""
    return reload_runs(variants, load, on_run)
