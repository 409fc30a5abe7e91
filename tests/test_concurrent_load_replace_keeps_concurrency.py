"""A ConcurrentLoad keeps the concurrency asked for until it runs (validated) or is read from a file (from_dict):
cut to its connections where it was made (d61f804's __post_init__), dataclasses.replace of a spec made with
-n 20 -c 64 and given connections=5000 ran at 20, the 64 lost without a word (frozen specs are varied this way)."""

from __future__ import annotations

import dataclasses

from accept_order import ConcurrentLoad
from accept_order.experiments.atlas.run import AtlasPlan


def test_a_spec_varied_by_replace_keeps_its_concurrency() -> None:
    quick = ConcurrentLoad(connections=20, concurrency=64)
    assert quick.validated().concurrency == 20  # as it runs: no more at once than its connections
    full = dataclasses.replace(quick, connections=5000)
    assert full.validated().concurrency == 64
    assert dataclasses.replace(quick.validated(), connections=5000).concurrency == 20  # what validated said ran


def test_the_spec_a_plan_saves_is_the_one_that_runs() -> None:
    plan = AtlasPlan(servers=("builtin",), load_connections=5, concurrency=20).validated()
    assert plan.to_dict()["load"]["concurrency"] == 5
    assert plan.load().concurrency == 5
