"""Progress on long work: "run k of N" with the time left, a heartbeat off a terminal, and bars that are
gone before the report (stderr only)."""

from __future__ import annotations

import re
import sys

import pytest
from click.testing import CliRunner

from accept_order.cli import output
from accept_order.cli.app import main
from accept_order.cli.bars import STALL_S, BarState
from accept_order.cli.consoles import SafeConsole
from accept_order.cli.progress import RunProgress, duration_text

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_heartbeat_says_which_run_how_long_and_about_how_long_is_left() -> None:
    clock, lines = FakeClock(), []
    runs = RunProgress(10, clock=clock, write=lines.append, every=10)
    runs.next()
    clock.now += 9
    assert not runs.beat() and lines == []  # not yet 10 s since the start
    clock.now += 1
    assert runs.beat() and lines == ["accept-order: run 1 of 10, 10 s elapsed"]  # nothing to estimate from
    clock.now += 4
    assert not runs.beat()  # the next beat is 10 s after the last, not after every check
    clock.now += 7
    runs.next()  # run 1 took 21 s
    clock.now += 21
    runs.next()  # so did run 2: run 3 starts at 42 s
    assert runs.beat()
    # 2 runs in 42 s: 21 s each, 8 to go with this one = 168 s
    assert lines[-1] == "accept-order: run 3 of 10, 42 s elapsed, about 3 min left"
    clock.now += 10  # 10 s into run 3: 158 s left
    runs.beat()
    assert lines[-1] == "accept-order: run 3 of 10, 52 s elapsed, about 3 min left"
    assert runs.label("epoll: connections") == "run 3 of 10, about 3 min left: epoll: connections"
    assert RunProgress(1).label("epoll") == "epoll"  # one run: no "run 1 of 1"


def test_durations_are_as_precise_as_an_estimate_deserves() -> None:
    assert [duration_text(s) for s in (0, 42.4, 89, 90, 3000, 5400, 7500)] == [
        "0 s", "42 s", "89 s", "2 min", "50 min", "1 h 30 min", "2 h 5 min",
    ]  # fmt: skip


@LINUX_ONLY
def test_repeat_counts_every_run_and_its_bar_is_gone_before_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal (stderr forced to be one, sharing the captured output with stdout as a terminal does),
    each bar says "run k of N" counting every run of every round, and the last one is erased before the
    report's title, which starts a clean line."""
    monkeypatch.setattr(output, "stderr", lambda: SafeConsole(stderr=True, force_terminal=True, width=100))
    args = ["latency", "--modes", "blocking,epoll", "-w", "1", "-n", "100", "-c", "2", "--repeat", "2"]
    result = CliRunner().invoke(main, args, env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    said = re.findall(r"run (\d) of (\d)", result.stderr)
    assert sorted(set(said)) == [("1", "4"), ("2", "4"), ("3", "4"), ("4", "4")]
    assert not re.search(r"run \d of", result.stdout)  # progress goes to stderr only
    title = "accept-order latency --repeat"
    assert re.search(rf"(\A|\n|\x1b\[2K){re.escape(title)}", result.output), result.output[-2000:]


@LINUX_ONLY
def test_progress_is_not_in_a_piped_report() -> None:
    result = CliRunner().invoke(main, ["compare", "--modes", "blocking,epoll", "-n", "3", "--repeat", "2"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("accept-order compare --repeat")


def test_a_ramp_counts_its_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """One ramp, one mode: its progress counts steps ("step k of N"), the unit a ramp is made of."""
    from conftest import run_cli

    from accept_order.cli import progress

    labels: list[str] = []
    real = progress.RunProgress.live
    monkeypatch.setattr(
        progress.RunProgress, "live", lambda self, text: labels.append(real(self, text)()) or real(self, text)
    )
    # --keep-going: both steps, whether a busy machine lets the first hold or not (its tail is in its rate)
    result = run_cli(["ramp", "-w", "2", "--rates", "50,100", "--step", "0.2s", "--p99", "5s", "--keep-going"])
    assert result.exit_code == 0, result.output
    assert [label.split(",")[0].split(":")[0] for label in labels] == ["step 1 of 2", "step 2 of 2"], labels


def test_bursts_are_estimated_by_their_size_not_as_the_mean_of_the_first() -> None:
    """Bursts of 1000, 3000 and 9000 clients: the first two took 1 s and 2 s. The mean of runs (1.5 s) would
    promise the 9000 in 1.5 s; a fixed part and a part per client through both says 0.5 + 0.0005 x 9000 = 5 s."""
    clock = FakeClock()
    runs = RunProgress(3, clock=clock, sizes=[1000, 3000, 9000])
    runs.next()
    assert runs.label("epoll: 1000 clients") == "run 1 of 3: epoll: 1000 clients"  # nothing to go on yet
    clock.now += 1
    runs.next()
    clock.now += 2
    runs.next()
    assert runs.left() == pytest.approx(5.0)
    assert runs.label("epoll: 9000 clients") == "run 3 of 3, about 5 s left: epoll: 9000 clients"
    clock.now += 3
    assert runs.estimate() == "about 2 s left"  # it counts down as the bar is redrawn (live)
    said = runs.live("epoll: 9000 clients")
    clock.now += 1
    assert said() == "run 3 of 3, about 1 s left: epoll: 9000 clients"


def test_an_estimate_outlasted_is_a_lower_bound_never_zero_left() -> None:
    clock = FakeClock()
    runs = RunProgress(3, clock=clock)
    runs.next()
    clock.now += 10
    runs.next()  # run 1 took 10 s: run 2 and run 3 about 10 s each
    assert runs.estimate() == "about 20 s left"
    clock.now += 25  # run 2 has taken 25 s, not 10: run 3 is still to come, this one's end is not known
    assert runs.left() is None
    assert runs.estimate() == "more than 10 s left"
    runs.next()
    clock.now += 30  # the last run, late: no figure at all (not "0 s left")
    assert runs.estimate() is None
    assert runs.label("epoll") == "run 3 of 3: epoll"


def test_a_ramp_that_may_stop_at_its_knee_says_up_to() -> None:
    clock = FakeClock()
    steps = RunProgress(4, clock=clock, noun="step", may_end_early=True)
    steps.next()
    clock.now += 3
    steps.next()
    assert steps.label("epoll: 400/s") == "step 2 of 4, up to about 9 s left: epoll: 400/s"
    clock.now += 5  # this step is late, and the ones after it may not run: nothing honest to say
    assert steps.estimate() is None


def test_a_full_bar_says_what_is_still_going_on() -> None:
    """A ramp step of 2 s (duration bar, the load's ticks): nothing while it runs; its time up, the
    connections in flight are waited for (at most the timeout); the ticks stopped, the load is done."""
    clock = FakeClock()
    step = BarState(2.0, by_count=False, timeout_s=5.0, ticks=True, clock=clock)
    step.update(100, 1.9)
    assert step.text() == ""
    clock.now += 0.2  # past 2 s of load, between two ticks
    assert step.text() == "time up, finishing those in flight (timeout 5 s)"
    step.update(400, 2.3)
    clock.now += STALL_S  # no tick since: drive_load has returned
    assert step.text() == "load done, stopping"


def test_a_burst_bar_says_when_it_waits_for_its_last_clients() -> None:
    clock = FakeClock()
    burst = BarState(1000, timeout_s=10.0, ticks=True, clock=clock)
    burst.update(990, 0.5)
    clock.now += 0.1
    burst.update(998, 0.6)
    assert burst.text() == ""
    clock.now += STALL_S
    burst.update(998, 0.6 + STALL_S)  # ticks go on, the count does not move
    assert burst.text() == "waiting for the last 2 (timeout 10 s)"
    burst.update(1000, 2.0)
    assert burst.text() == "load done, stopping"


def test_a_bar_fed_by_each_connection_never_guesses_from_silence() -> None:
    """`run`'s bar moves once per connection (no ticks): a slow connection is not the end of the load."""
    clock = FakeClock()
    run = BarState(300, clock=clock)
    run.update(10)
    clock.now += 30
    assert run.text() == ""
    run.update(300)
    assert run.text() == "load done, stopping"
