"""Units and words of the first hour (issue 27 §4): durations share one unit on a line of a report, plurals
are English, ramp's CPU column is one labelled figure, every command's one-line help is a whole sentence,
and --repeat's help fits the command it is in. (Bare numbers as durations: test_cli_options.py.)"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import click
import pytest
from conftest import run_cli

from accept_order.cli.app import COMMANDS, main
from accept_order.experiments.ramp.result import RampResult
from accept_order.experiments.ramp.step_verdict import signals
from accept_order.render.text import duration_us, durations_us, plural

GOLDEN = Path(__file__).parent / "data" / "golden"
UNIT = re.compile(r"\d (µs|ms|s)\b")


def test_durations_on_one_line_share_a_unit() -> None:
    assert durations_us(0, 0) == ["0 ms", "0 ms"]  # was `work 0 µs, gap 0 ms`
    assert durations_us(200, 50_000) == ["0.2 ms", "50 ms"]
    assert durations_us(1000, 2_000_000) == ["1 ms", "2000 ms"]
    assert durations_us(2_000_000, 0, 1_500_000) == ["2 s", "0 s", "1.5 s"]
    assert durations_us(200, 0) == ["200 µs", "0 µs"]
    assert [duration_us(v) for v in (0, 250, 1500, 2_000_000)] == ["0 ms", "250 µs", "1.5 ms", "2 s"]


@pytest.mark.parametrize("name", sorted(p.stem for p in GOLDEN.glob("*.json")))
def test_a_settings_line_of_a_saved_result_has_one_unit(name: str) -> None:
    shown = run_cli(["show", str(GOLDEN / f"{name}.json")], columns=400)
    assert shown.exit_code == 0, shown.stderr
    for line in shown.stdout.splitlines():
        if re.search(r"\bwork \d", line):
            assert len(set(UNIT.findall(line))) <= 1, line


def test_the_run_footer_says_work_and_gap_in_one_unit() -> None:
    result = run_cli(["compare", "--modes", "blocking", "-w", "1", "-n", "2", "--work", "200us", "--gap", "50ms"])
    assert result.exit_code == 0, result.stderr
    assert "1 worker, 2 connections each, work 0.2 ms, gap 50 ms;" in result.stdout


def test_plurals_are_english() -> None:
    assert [plural(1, "process"), plural(4, "process"), plural(2, "worker")] == [
        "1 process",
        "4 processes",
        "2 workers",
    ]
    assert plural(3, "child", "children") == "3 children"


def ramp_step() -> tuple[RampResult, object]:
    ramp = RampResult.from_dict(json.loads((GOLDEN / "ramp.json").read_text()))
    return ramp, ramp.steps[0]


def test_ramps_seen_line_counts_one_connection_as_one() -> None:
    _, step = ramp_step()
    one = dataclasses.replace(step, queues=(1,), counters={"TcpEstabResets": 1, "TcpExtListenOverflows": 1})  # type: ignore[type-var]
    seen = signals(one, 2, 2)  # type: ignore[arg-type]
    assert "up to 1 connection waited in an accept queue" in seen
    assert any(said.startswith("1 connection reset") for said in seen) and "the accept queue overflowed once" in seen


def test_ramps_workers_cpu_is_one_figure_and_each_worker_is_named() -> None:
    shown = run_cli(["show", str(GOLDEN / "ramp.json")], columns=200).stdout
    rows = [line for line in shown.splitlines() if line.rstrip().endswith("held")]
    assert rows and not any(re.search(r"\d+% \d+%", row) for row in rows), rows  # not `1% 0%`
    assert "workers CPU: the workers' CPU time over the step, as a share of the 2 CPUs they could use" in shown
    assert "CPU per worker (of one CPU): worker 0 1%, worker 1 0%" in shown


def test_each_commands_line_in_the_top_level_help_is_a_whole_sentence() -> None:
    """click shows a command's first sentence, cut with '...' where it is longer than the line has room for
    (65 characters at 80 columns): each first sentence fits, and the help shows it whole."""
    root = click.Context(main, info_name="accept-order")
    for name in COMMANDS:
        command = main.get_command(root, name)
        assert command is not None
        short = command.get_short_help_str(65)
        assert short.endswith(".") and not short.endswith("..."), (name, short)
    listed = run_cli(["--help"], columns=80).stdout
    assert "..." not in listed.partition("Commands:")[2]


def test_repeat_says_what_it_repeats() -> None:
    one, several = (" ".join(run_cli([name, "--help"]).stdout.split()) for name in ("run", "compare"))  # unwrapped
    assert "Run it this many times and report the median" in one and "interleaved" not in one
    assert "the modes and servers interleaved (A B A B)" in several
    assert "comparison" not in one
