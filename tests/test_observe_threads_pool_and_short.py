"""observe of a threaded server: 'a connection carried N' data segments counts a pool opened before observing and the
short connections accepted while observed, added.

A threaded server is one process: the segments of its connections that closed between two looks are in its count
(load.py gives them to the one process), so the connections they came on are those a look saw (a pool opened before
the window among them) and those accepted in the window that no look saw (the accepts less those seen). c6f0855 took
the larger of the looks' and the accepts': a HAProxy pool of 8 opened before observing (no accept seen) beside 100
one-request connections read 'a connection carried' over 100, where 108 carried them. The file is HAProxy 2.6's
threads under wrk -c8 (tests/data/observe_haproxy_threads_kept.json: 9 accepted, 8 of them seen held)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import sleeps

DATA = Path(__file__).parent / "data" / "observe_haproxy_threads_kept.json"


def carried(document: dict[str, object]) -> int:
    said = sleeps(ObserveResult.from_dict(document))
    assert said is not None, said
    found = re.search(r"a connection carried ([\d,]+) of them", said)
    assert found is not None, said
    return int(found.group(1).replace(",", ""))


def test_a_pool_opened_before_and_short_connections_accepted_are_added() -> None:
    document = json.loads(DATA.read_text())
    for worker in document["workers"]:
        worker["accepts"] = 0
    document["workers"][3]["accepts"] = 100  # 100 accepted while observed, none seen by a look
    document["accepted_seen"] = 0  # the 8 seen were open before the window (a pool)
    document["process_segments_in"] += 100  # one segment each
    assert carried(document) == round(document["process_segments_in"] / 108)


def test_the_run_as_it_was_counts_its_nine() -> None:
    """8 accepted and seen, and wrk's extra connection accepted and never seen: 9."""
    document = json.loads(DATA.read_text())
    assert carried(document) == round(document["process_segments_in"] / 9)
