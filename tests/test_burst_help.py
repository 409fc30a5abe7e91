"""'burst --clients 500 --requests-per-connection 10' drove 595 to 608 connections (the load shares a
driver's clients × K requests among its connections), and the report said so, while 'burst --help' said each
client's connection carries K. The help now says what the load does; a real burst is its witness."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli


def test_the_help_says_requests_are_shared_not_k_per_client() -> None:
    result = run_cli(["burst", "--help"], columns=2000)
    assert result.exit_code == 0
    words = " ".join(result.stdout.split())
    assert "Requests each client sends over its connection" not in words
    assert "each client's 20 requests" not in words
    assert (
        "the burst sends clients × K requests over connections opened all at once, one per client, each carrying "
        "at most K" in words
    )
    # more connections than clients for clients × K requests: some carried fewer than K, not only later ones
    assert "a burst may open more connections than clients, and then some carry fewer than K" in words
    assert "later ones carrying fewer" not in words


def test_a_burst_sends_clients_times_k_requests_over_at_least_as_many_connections(tmp_path: Path) -> None:
    """What the help says, by the replies (each names its worker): 60 × 5 requests answered, over no fewer
    connections than clients and no more than requests."""
    out = tmp_path / "burst.json"
    args = ["burst", "--clients", "60", "--requests-per-connection", "5", "-w", "2", "--json", str(out)]
    result = run_cli(args)
    assert result.exit_code == 0, result.output
    (cell,) = json.loads(out.read_text())["runs"][0]["cells"]
    assert sum(cell["served"]) == 60 * 5 and not cell.get("errors")
    assert 60 <= sum(cell["connections"]) <= 60 * 5
    if sum(cell["connections"]) > 60:  # then some carried fewer than 5, whichever were under way at the end
        words = " ".join(result.stdout.split())
        assert "so some connections carried fewer than K" in words and "later connections" not in words
