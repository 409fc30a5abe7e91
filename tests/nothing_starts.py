"""A fixture for the tests of a command refused before anything starts: `nothing_starts` is every server the run
would have started (none must: every run's server is made in lifecycle.lifecycle) and 'netns' where a private network
namespace would have been made (reload's); each of those raises at once, so a refusal that came too late fails.
Imported by name (`from nothing_starts import nothing_starts`), as conftest's helpers are (tests/ is on sys.path;
no test_ prefix, so pytest collects nothing here).
"""

from __future__ import annotations

from typing import Any

import pytest

from accept_order.core import netns
from accept_order.core.spec import ServerSpec
from accept_order.experiments import lifecycle


@pytest.fixture
def nothing_starts(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every server a run would start (none must), and no private namespace made (reload's)."""
    started: list[Any] = []

    def make_target(spec: ServerSpec, stamps: bool = False) -> Any:
        started.append(spec)
        raise AssertionError(f"{spec.label} started before the command was refused")

    def enter_private() -> None:
        started.append("netns")
        raise AssertionError("a private network namespace was made before the command was refused")

    monkeypatch.setattr(lifecycle, "make_target", make_target)
    monkeypatch.setattr(netns, "enter_private", enter_private)
    return started
