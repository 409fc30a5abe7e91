"""A list option whose values each make one run refuses a value given twice, as --modes does: `sweep --accept-batch
1,1` ran cap 1 twice, both rows '1 limit', and judged it against itself ('No cap is clearly better ... the cap did
not change the tail here'); `burst --clients 5,5` dropped the second 5 without a word. (ramp's steps say more: they
must rise step by step.)"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli
from nothing_starts import nothing_starts  # noqa: F401 - a fixture


@pytest.mark.parametrize(
    ("args", "option", "value", "repeated"),
    [
        (["sweep", "--accept-batch", "1,4,1", "-n", "10"], "--accept-batch", "1,4,1", "1"),
        (["burst", "--clients", "5,5"], "--clients", "5,5", "5"),
        (["reload", "--migrate", "0,0"], "--migrate", "0,0", "0"),
    ],
)
def test_a_value_given_twice_is_refused_before_anything_runs(
    nothing_starts: list[Any],  # noqa: F811 - the fixture imported above
    args: list[str],
    option: str,
    value: str,
    repeated: str,
) -> None:
    result = run_cli(args)
    said = f"Invalid value for '{option}': '{value}': value(s) given more than once: {repeated}"
    assert_one_error_line(result, 2, said)
    assert nothing_starts == [] and result.stdout == ""


def test_burst_points_a_word_not_a_count_given_twice_at_the_hosts_option() -> None:
    # burst's --clients counts connections; its refusal named --client-hosts for '5,5' too, as if a host were meant
    hint = "(client hosts to drive the bursts from: --client-hosts)"
    assert hint not in run_cli(["burst", "--clients", "5,5"]).output
    assert hint not in run_cli(["burst", "--clients", "0"]).output  # a count out of range is a count
    assert hint in run_cli(["burst", "--clients", "host1,host2"]).output
