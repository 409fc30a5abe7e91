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


def test_closes_not_read_count_as_connections_no_look_saw_and_say_so() -> None:
    # The same observation as if the watch had skipped 1,000 announcements for its CPU budget and the kernel had
    # dropped 17: they are of the server's ports (the watch's filter), of sockets no look saw or one it did, so
    # they are counted as connections and the figure is said to be about
    data = json.loads((DATA / "observe_gunicorn_sampled.json").read_text())
    result = data.get("result", data)
    result["closes_skipped"], result["closes_lost"] = 1000, 17
    said = sleeps(ObserveResult.from_dict(data))
    assert said is not None
    sleeps_total = 2943 + 2965 + 2900  # the three workers' voluntary switches in the file
    assert said.startswith(f"the workers slept about {sleeps_total / (5 + 4978 + 1017):.2f} times per connection ")
    assert said.endswith("; 1,017 closes not read are counted as connections no look saw"), said
