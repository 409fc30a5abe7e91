"""observe says a share of the bytes short of all of them with the decimals it needs (experiments/observe/judged.py).

A share between 99.5% and 100% rounded to '100%': the saved kept-pool run (tests/data/observe_kept_pool.json:
6,363,856 bytes in the workers' shares, 1 byte of a connection no look saw) read '100% of the bytes received' two
lines below the note of the byte in no worker's share.
"""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli

from accept_order.experiments.observe.judged import part_said

KEPT_POOL = Path(__file__).parent / "data" / "observe_kept_pool.json"


def test_the_kept_pool_run_does_not_say_all_of_its_bytes() -> None:
    shown = run_cli(["show", str(KEPT_POOL)], columns=1000)
    assert shown.exit_code == 0, shown.output
    assert "the 1 byte it received" in shown.stdout  # the byte in no worker's share, as the file holds it
    assert "more than 99.99% of the bytes received" in shown.stdout
    assert "100% of the bytes" not in shown.stdout


def test_shares_short_of_all_keep_the_decimals_they_need() -> None:
    assert [part_said(p, 10_000) for p in (9_940, 9_950, 9_994, 9_999, 10_000)] == [
        "99%",
        "99.5%",
        "99.9%",
        "99.99%",
        "100%",
    ]
    assert part_said(999_999, 1_000_000) == "more than 99.99%"
    assert part_said(1, 1_000) == "less than 1%" and part_said(0, 1_000) == "0%"
