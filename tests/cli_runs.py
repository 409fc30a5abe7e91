"""The command line as the tests run it: in process (run_cli: click's runner, a fixed width, a bounded time;
ran_in_process: the same, read as a finished process is), its one line of error (assert_one_error_line), and a script
of experiments/ as a user runs it. Tests import these from conftest too."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import NamedTuple

from click.testing import CliRunner, Result

from accept_order.cli.app import main

# A command run in this process that has not ended by then is taken as hung. As a process of its own it was bounded by
# subprocess.run's timeout (60-180 s in the files whose commands moved into the test's process); in process nothing
# bounded it, and one that waited for ever held its xdist worker, and so the suite, for ever. Generous for a busy
# machine: over the 180 s the longest of those timeouts gave.
IN_PROCESS_TIMEOUT_S = 300.0
# Raised again this often until the command is out, where a handler swallowed the first (an `except BaseException`,
# a __del__) or the teardown it set off hangs too; long enough for a teardown that ends servers on a busy machine,
# which a second one raised inside it would cut short.
AGAIN_S = 30.0


class CommandHung(BaseException):
    """A command in this process outlived its time. A BaseException, not an Exception: the command's own handlers
    (its errors, Ctrl-C) pass it on, so each `with` and `finally` on the way out ends its children as for an error."""


@contextmanager
def bounded(seconds: float, what: str) -> Iterator[None]:
    """CommandHung raised in the block (SIGALRM) once it has run `seconds`. Left unbounded where a timer of the
    test's own is running, or off the main thread (where Python cannot take a signal's handler)."""
    if threading.current_thread() is not threading.main_thread() or signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        raise CommandHung(f"{what} did not end within {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds, AGAIN_S)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)  # first: no alarm may come once the handler is the test's again
        finally:
            signal.signal(signal.SIGALRM, previous)


def run_cli(
    args: Sequence[str],
    columns: int = 200,
    extra_env: dict[str, str | None] | None = None,
    input: str | None = None,
    prog_name: str | None = None,
    timeout_s: float = IN_PROCESS_TIMEOUT_S,
) -> Result:
    """Invoke `accept-order ARGS` in-process; any exception other than SystemExit fails the test loudly, and so
    does a command still running after `timeout_s` (CommandHung raised in it, its teardown run on the way out).

    click >= 8.2: result.stdout and result.stderr are separate, result.output interleaves both.
    `columns` sets rich's width (COLUMNS) so that assertions do not depend on where lines wrap. `prog_name`: the
    name click says (its own guess here is the group function's, 'main'; the command's script says 'accept-order').
    """
    env: dict[str, str | None] = {"COLUMNS": str(columns), **(extra_env or {})}
    command = f"accept-order {' '.join(args)}"
    try:
        with bounded(timeout_s, command):
            # prog_name only when given: an explicit None reaches click's main(), which then takes the name from
            # sys.argv[0] ('-c' in an xdist worker) instead of CliRunner's default (the group function's, 'main')
            named = {} if prog_name is None else {"prog_name": prog_name}
            result = CliRunner().invoke(main, list(args), catch_exceptions=True, env=env, input=input, **named)
    except CommandHung as hung:
        raise AssertionError(f"{hung} (in this process: run_cli's bound)") from None
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(
            f"accept-order {' '.join(args)} raised {result.exception!r}\n{result.output}"
        ) from result.exception
    return result


class Ran(NamedTuple):
    """A command that ran in this process, read as a finished process is (subprocess.CompletedProcess's names); its
    repr shows all three in a failed assertion's message."""

    returncode: int
    stdout: str
    stderr: str


def ran_in_process(*args: str, timeout_s: float = IN_PROCESS_TIMEOUT_S) -> Ran:
    """`accept-order ARGS` in this process (run_cli), for a test that reads only its status, stdout, stderr and
    files: a separate interpreter cost 0.06-0.17 CPU-s a command, for nothing such a test asserts. Not for a test
    about the process (signals, what it leaves, a terminal, its descriptors, process-wide state such as rlimits),
    nor one that asserts a whole stderr its forked children may write to: theirs is lost with the child's copy of
    the captured stream here. Bounded as run_cli is (`timeout_s`), as subprocess.run's timeout bounded a process.
    Printed as that process printed, off a terminal: no COLUMNS (run_cli's fixed width would make the report a
    terminal's, 200 columns wide with its prose wrapped), so its tables are cli/output's piped width and its prose
    lines whole."""
    result = run_cli(args, extra_env={"COLUMNS": None}, prog_name="accept-order", timeout_s=timeout_s)
    return Ran(result.exit_code, result.stdout, result.stderr)


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
