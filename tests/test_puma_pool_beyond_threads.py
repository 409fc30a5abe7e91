"""A pool of more kept connections than Puma's threads, on the Puma this tool launches.

`latency --server puma -w 2 --pool -c 16 --requests-per-connection 0 --duration 4s` read p99.9 4015 ms, max
4035 ms, and blamed the load generator's CPU; Puma's own request log gave 6 of the 16 connections 2 requests
each in the 4 s and the other 10 about 3,000: each worker's 5 threads kept 5 connections inline for the whole
run. The generated config had lifted max_fast_inline (to keep the connections open), and with it Puma's hand-
back of a connection to its reactor after 10 inline requests when others wait for a thread (server.rb). Debian's
Puma run by hand the same way (-w 2 -t 0:5, its default max_fast_inline) gave a max of 185 ms. The config keeps
Puma's max_fast_inline now: every connection of the pool is served, by Puma's log."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path

import pytest
from conftest import run_cli

from accept_order.servers.launched.puma import puma_missing

POOL = 16  # over 2 workers of Puma's 5 threads: 3 connections a worker beyond its threads
# A closed loop takes every CPU it is given for this long. With the old config the starved six had 2 requests
# each beside a median of 54-179 in 0.5 s (load 18, 2 vCPUs), so 1 s still tells them apart with room to spare
DURATION = "1s"

pytestmark = pytest.mark.skipif(puma_missing() is not None, reason=str(puma_missing()))


def test_every_connection_of_a_pool_beyond_the_threads_is_served(tmp_path: Path) -> None:
    out = tmp_path / "puma.json"
    args = ["latency", "--server", "puma", "-w", "2", "--pool", "-c", str(POOL), "--requests-per-connection", "0"]
    result = run_cli([*args, "--duration", DURATION, "--json", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    assert document["errors"] == {} and document["held_at_end"] == document["connections"]  # none closed
    # Puma's own log: each row a request (worker pid, client port, the connection's request number)
    per_connection = Counter((row[0], row[1]) for row in document["evidence"]["witness"]["requests"])
    assert len(per_connection) == POOL, per_connection
    counts = sorted(per_connection.values())
    # starved, a connection had its pool-filling request and one more at the end (2 of ~3,000 each)
    assert counts[0] >= statistics.median(counts) / 10, counts
