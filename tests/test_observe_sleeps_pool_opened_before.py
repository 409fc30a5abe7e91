"""observe of a server whose keep-alive pool was opened before observing tells its sleeps per data segment.

HAProxy 2.6 (nbthread 4) under `wrk -t1 -c8` started before observe's probes attached: no accept in the window, 8
connections seen held, 104,613 data segments received, and no line on how often the threads slept, where a pool
opened long before is what a platform engineer observes. The sleeps were said only where something was accepted
(per connection, the figure needs a connection count); per data segment they need the segments and the connections
that carried them, which the looks gave. The file is HAProxy's threads under wrk -c8
(tests/data/observe_haproxy_threads_kept.json) made that run's: nothing accepted, the 8 seen open before."""

from __future__ import annotations

import json
from pathlib import Path

from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import sleeps

DATA = Path(__file__).parent / "data" / "observe_haproxy_threads_kept.json"


def test_a_pool_opened_before_observing_gets_its_sleeps_per_segment() -> None:
    document = json.loads(DATA.read_text())
    for worker in document["workers"]:
        worker["accepts"] = 0
    document["accepted_seen"] = 0
    said = sleeps(ObserveResult.from_dict(document))
    assert said is not None
    slept = sum(w["voluntary_switches"] for w in document["workers"])
    segments = document["process_segments_in"]
    assert said.startswith(f"the workers slept {slept / segments:.2f} times per data segment received"), said
    assert f"a connection carried {segments / 8:,.0f} of them" in said, said


def test_nothing_accepted_and_no_segments_says_nothing() -> None:
    document = json.loads(DATA.read_text())
    for worker in document["workers"]:
        worker["accepts"] = 0
    document["accepted_seen"], document["process_segments_in"] = 0, 0
    assert sleeps(ObserveResult.from_dict(document)) is None
