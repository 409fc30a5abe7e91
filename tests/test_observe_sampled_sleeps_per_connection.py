"""observe without bpftrace (as a user) says the workers' sleeps per connection over every connection the kernel
announced closed, not over the few a look saw: PyPI's gunicorn 27 (3 sync workers, a WSGI app sleeping 2 ms) under
'wrk -t2 -c20', observed as a user, read 'the workers slept 1761.60 times per connection': 8,808 sleeps over the 5
connections seen, where 4,978 more opened and closed between two looks. Observed as root under the same load,
bpftrace's accepts gave 1.80.

Both files are those two observations (tests/data/observe_gunicorn_sampled.json, _traced.json, Linux 6.18, 2 vCPUs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import sleeps

DATA = Path(__file__).parent / "data"


def _per_connection(name: str) -> float:
    result = ObserveResult.from_dict(json.loads((DATA / f"observe_gunicorn_{name}.json").read_text()))
    said = sleeps(result)
    assert said is not None
    found = re.match(r"the workers slept (\d+\.\d+) times per connection ", said)
    assert found, said
    return float(found.group(1))


def test_sampled_sleeps_count_the_connections_no_look_saw() -> None:
    traced, sampled = _per_connection("traced"), _per_connection("sampled")
    assert traced == 1.80  # the kernel's count of accepts: unchanged
    assert sampled == 1.77  # 8,808 sleeps over the 5 seen and the 4,978 announced closed between looks
    assert abs(sampled - traced) / traced < 0.1  # the same server under the same load, read the two ways
