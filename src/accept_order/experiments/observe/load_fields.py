"""The fields of observe's result about its load sampling (load.py's LoadSampler fills them; ObserveResult's
fields by the same names)."""

from __future__ import annotations

from typing import TypedDict


class LoadSummary(TypedDict, total=False):
    """The result's fields about the load sampling (ObserveResult's, by name)."""

    load_samples: int
    load_every_s: float
    load_longest_s: float | None
    accepted_seen: int
    closed_busy: int
    closed_busy_bytes_in: int
    closes_counted: int
    closes_lost: int
    closes_skipped: int
    closed_unlooked: int
    closed_unlooked_bytes_in: int
    closes_late: int
    closes_late_bytes_in: int
