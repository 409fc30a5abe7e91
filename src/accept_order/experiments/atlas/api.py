"""The atlas's Python API."""

from __future__ import annotations

from collections.abc import Callable

from ...core.spec import ServerSpec
from .result import AtlasResult
from .run import AtlasPlan, run_atlas


def atlas(plan: AtlasPlan, on_variant: Callable[[ServerSpec, int, int], None] | None = None) -> AtlasResult:
    """Every installed server in each of its modes, measured the same way (see experiments/atlas)."""
    return run_atlas(plan, on_variant)
