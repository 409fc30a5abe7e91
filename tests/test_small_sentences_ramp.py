"""`ramp -c 8` was click's "No such option: -c" while latency, sweep, run and the others take -c. A ramp's
load is stepped: --concurrency-steps steps latency's closed-loop -c, --in-flight caps an open loop's as
latency's -c with --rate does, so a single -c would mean either. It is refused in one line saying which."""

from __future__ import annotations

import pytest
from conftest import assert_one_error_line, run_cli


@pytest.mark.parametrize("flag", ["-c", "--concurrency"])
def test_ramp_refuses_c_and_says_what_to_use(flag: str) -> None:
    result = run_cli(["ramp", flag, "8", "--rates", "100"])
    assert_one_error_line(result, 2, "ramp takes no -c", "--concurrency-steps 8", "--in-flight 8")
    assert "No such option" not in result.stderr


def test_ramp_help_does_not_offer_c() -> None:
    result = run_cli(["ramp", "--help"])
    assert result.exit_code == 0
    assert "--concurrency " not in result.stdout and " -c" not in result.stdout
