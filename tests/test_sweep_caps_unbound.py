"""sweep picks no cap where no wakeup took more connections than the smallest cap allows.

`sweep -w 4 --pool -c 16 --requests-per-connection 0 --work 1ms --duration 2s` (the pool opened one connection at a
time at idle, as sweep's --help suggests for kept connections) took at most 1 connection per wakeup in every one of
its four runs (the workers' own count, max/wakeup 1), yet its verdict compared the caps' tails as the cap's doing
('No cap is clearly better: 1 limit vs 32 limit: 1 limit's whole tail is lower ...'), and a tail 10% tighter
would have read 'pick 1 limit'. No cap bound there: what parts the runs is one run from another, said so. The file
is that run's own (tests/data/sweep_pool_caps_unbound.json); the golden sweep, whose uncapped run took 4 in a
wakeup, still picks."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

DATA = Path(__file__).parent / "data"
UNBOUND = DATA / "sweep_pool_caps_unbound.json"


def verdict(path: Path) -> str:
    lines = run_cli(["show", str(path)], columns=1000).stdout.splitlines()
    return next(line for line in lines if line.startswith("Verdict:"))


def test_no_cap_is_picked_where_none_bound() -> None:
    said = verdict(UNBOUND)
    assert said.startswith(
        "Verdict: No cap to pick: no wakeup of any run accepted more than 1 connection, so no cap bound, and what "
        "parts them is one run from another (1 limit vs 4 limit: "
    ), said


def test_a_wakeup_that_took_more_than_a_cap_lets_the_caps_be_compared(tmp_path: Path) -> None:
    data = json.loads(UNBOUND.read_text())
    uncapped = next(run for run in data["runs"] if run["server"]["accept_batch"] == 0)
    uncapped["counters"][0]["max_batch"] = 2  # one wakeup of the uncapped run took two: a cap of 1 would bind
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(data))
    said = verdict(path)
    assert "no cap bound" not in said and "cap is clearly better" in said, said
    assert verdict(DATA / "golden" / "sweep.json").startswith("Verdict: Pick no limit")


def test_one_whole_run_is_not_set_against_itself(tmp_path: Path) -> None:
    """Where every other cap lost connections, the one whole run was compared with itself: '(1 limit vs 1 limit: p50,
    p99, p99.9, deviation and average within 10% ...)'."""
    data = json.loads(UNBOUND.read_text())
    for run in data["runs"][1:]:
        run["errors"] = {"timeout": 5}  # lost: ranked after the whole run, not compared
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(data))
    said = verdict(path)
    assert "no cap bound" in said and " vs 1 limit" not in said, said
