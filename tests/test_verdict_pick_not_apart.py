"""A verdict picks no cap (and names no mode as plainly tighter) where How sure says the runs' own samples cannot tell
them apart.

`sweep -n 300 -c 8` (Linux 6.18, 2 vCPUs, load about 5) read 'Pick 4 limit: its tail is tighter than every other
cap's ... How sure: not even within these runs: 4 limit's and no limit's p99s are within what their own samples can
tell apart (95% intervals 1.23-∞ and 1.58-∞ ms overlap, 300 latencies each)': advice surer than its own How sure. The
file is that run's (tests/data/sweep_pick_not_apart.json). Now no cap is picked: which cap led and why, that it led
by less than the samples tell apart, and what would tell the caps apart. latency --modes says the same of a mode the
same way (tests/data/golden/latency-compare.json: 200 latencies each, p99 intervals overlap)."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli

DATA = Path(__file__).parent / "data"
TELL = "a larger load (more latencies: a larger -n or --duration) or more rounds (--repeat 5) would tell the"


def verdict(path: Path) -> str:
    lines = run_cli(["show", str(path)], columns=1000).stdout.splitlines()
    return next(line for line in lines if line.startswith("Verdict:"))


def test_a_sweep_picks_no_cap_its_samples_cannot_tell_apart() -> None:
    said = verdict(DATA / "sweep_pick_not_apart.json")
    assert "Pick" not in said, said
    assert said.startswith(
        "Verdict: No cap to pick: 4 limit led on these runs' figures, by less than the runs' own samples can tell "
        "apart: its tail is tighter than every other cap's, by over 10% and higher on no figure (p99 1.31 ms vs 1.91 "
        f"to 8.34 ms, deviation 0.18 ms vs 0.28 to 1.54 ms); {TELL} caps apart. How sure: not even within these runs: "
    ), said


def test_latency_modes_says_the_same_of_a_mode() -> None:
    said = verdict(DATA / "golden" / "latency-compare.json")
    assert said.startswith(
        "Verdict: blocking had the tightest tail of these runs, by less than the runs' own samples can tell apart: "
    ), said
    assert f"are lower than reuseport's; {TELL} modes apart. How sure: not even within these runs: " in said, said
