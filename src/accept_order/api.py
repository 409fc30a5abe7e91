"""The Python API, and the façade every command of the CLI goes through.

`run(mode="epoll", workers=3, connections=6)` takes keyword options and returns a RunResult; the other
functions take frozen specs (core/spec.py) and plans. Each is defined by its experiment, in
experiments/NAME/api.py, and listed in the registry (experiments/__init__.py EXPERIMENTS): `api.latency`
and `accept_order.latency` import it on first use. Each validates what it is given and goes through the
one lifecycle in experiments/session.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .experiments import PUBLIC, imported, public_function

# Helpers the commands share besides the experiments' functions, imported on first use as they are.
HELPERS = {"split_options": "order.api:split_options"}  # keyword options -> (ServerSpec, load spec)
__all__ = sorted([*PUBLIC, *HELPERS])


def __getattr__(name: str) -> Callable[..., Any]:
    found = imported(HELPERS[name]) if name in HELPERS else public_function(name)
    if found is None:
        raise AttributeError(f"module 'accept_order.api' has no attribute {name!r}")
    return found


def __dir__() -> list[str]:
    return sorted({*globals(), *PUBLIC, *HELPERS})
