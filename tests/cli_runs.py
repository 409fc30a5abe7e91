"""The command line as the tests run it: in process (run_cli: click's runner, a fixed width), its one line of
error (assert_one_error_line), and a script of experiments/ as a user runs it. Tests import these from conftest too."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner, Result

from accept_order.cli.app import main


def run_cli(
    args: Sequence[str], columns: int = 200, extra_env: dict[str, str] | None = None, input: str | None = None
) -> Result:
    """Invoke `accept-order ARGS` in-process; any exception other than SystemExit fails the test loudly.

    click >= 8.2: result.stdout and result.stderr are separate, result.output interleaves both.
    `columns` sets rich's width (COLUMNS) so that assertions do not depend on where lines wrap.
    """
    env: dict[str, str | None] = {"COLUMNS": str(columns), **(extra_env or {})}
    result = CliRunner().invoke(main, list(args), catch_exceptions=True, env=env, input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(
            f"accept-order {' '.join(args)} raised {result.exception!r}\n{result.output}"
        ) from result.exception
    return result


def assert_one_error_line(result: Result, code: int, *fragments: str) -> str:
    """The CLI failed with `code` and exactly one line on stderr (containing every fragment)."""
    lines = result.stderr.splitlines()
    assert result.exit_code == code, f"exit {result.exit_code}, expected {code}; stderr: {result.stderr!r}"
    assert len(lines) == 1, f"expected one stderr line, got {lines!r}"
    line = lines[0]
    assert line.startswith("accept-order: error: "), line
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in line, f"{fragment!r} not in {line!r}"
    return line


EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def run_experiment(script: str, *args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    """Run experiments/SCRIPT as a user would, with a bounded time and (optionally) a terminal width."""
    env = None if columns is None else {"COLUMNS": str(columns), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, str(EXPERIMENTS / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
