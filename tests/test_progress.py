"""Progress on long work: "run k of N" with the time left, a heartbeat off a terminal, and bars that are
gone before the report (stderr only)."""

from __future__ import annotations

import re
import sys

import pytest
from click.testing import CliRunner

from accept_order.cli import output
from accept_order.cli.app import main
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
    monkeypatch.setattr(output, "stderr", lambda: output._Console(stderr=True, force_terminal=True, width=100))
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
    real = progress.RunProgress.label
    monkeypatch.setattr(progress.RunProgress, "label", lambda self, text: labels.append(real(self, text)) or labels[-1])
    result = run_cli(["ramp", "-w", "2", "--rates", "50,100", "--step", "0.2s", "--p99", "5s"])
    assert result.exit_code == 0, result.output
    assert [label.split(",")[0].split(":")[0] for label in labels] == ["step 1 of 2", "step 2 of 2"], labels
