"""merge: the server's own listeners' drops (evidence.listener_drops, each listener's sk_drops over the run), added
where both files read them. Kept from the first file alone, they would read as the merged load's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def add_listener_drops(into: dict[str, Any], run: Mapping[str, Any]) -> None:
    """`run`'s evidence's listener drops added to `into`'s, or none kept where either file lacks them."""
    mine, theirs = into.get("listener_drops"), run.get("listener_drops")
    if isinstance(mine, int) and isinstance(theirs, int):
        into["listener_drops"] = mine + theirs
    else:
        into.pop("listener_drops", None)
