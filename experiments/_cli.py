"""Command-line pieces shared by the experiment scripts (run as `python experiments/NAME.py`) and the
benchmarks (benchmarks/*.py import this file by its path): one argument parser for all of them."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from accept_order.core.errors import AcceptOrderError, PlanError


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def mode_list(text: str) -> list[str]:
    """`blocking,reuseport` or `all`, as the accept-order commands take them (servers.modes.parse_modes)."""
    from accept_order.servers.modes import parse_modes

    try:
        return parse_modes(text)
    except PlanError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@contextmanager
def one_line_errors(prog: str) -> Iterator[None]:
    """The harness's errors and Ctrl-C as one stderr line and an exit status; workers are already
    stopped by the `with` blocks the exception passed through."""
    try:
        yield
    except AcceptOrderError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; all workers stopped", file=sys.stderr)
        raise SystemExit(130) from None


# `--json -`: the JSON on stdout (click.File's convention, as the accept-order commands take it) and the tables on
# stderr: jq reads the one while a person reads the other, and they are the script's findings, which no `show` prints
# again.
STDOUT = "-"


def json_to_stdout(prog: str, text: str) -> int:
    """`text` on stdout, whole; the exit status: 0, or, after one line on stderr naming the file the JSON was kept in
    instead, 141 when its reader went before it took it all (`| head -c 100` of a JSON larger than the pipe: how
    `| head` ends any command, as the accept-order commands end), 1 when stdout could not take it otherwise (a full
    disk) or the JSON could be kept nowhere, and 130 when a Ctrl-C came while it waited on a reader that took
    nothing (a traceback before, then a flush at exit that waited again)."""
    from accept_order.cli.result_stdout import kept_instead
    from accept_order.core.status import ExitStatus

    try:
        if sys.stdout is None:  # the caller closed it (>&-): Python left no stream
            raise OSError(0, "it is closed")
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, KeyboardInterrupt) as exc:
        if isinstance(exc, KeyboardInterrupt):
            reason, status = "interrupted", 130
        else:
            reason, status = "its reader has gone" if isinstance(exc, BrokenPipeError) else exc.strerror or str(exc), 1
        kept = kept_instead(text, os.path.basename(prog).removesuffix(".py"))
        if isinstance(exc, BrokenPipeError) and not kept.startswith("the result is lost"):  # lost: a failure
            status = ExitStatus.BROKEN_PIPE
        print(f"{prog}: error: cannot write the JSON to stdout: {reason}; {kept}", file=sys.stderr)
        try:  # what is still buffered goes nowhere: Python's own flush at exit must neither fail (120) nor wait
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return status
    return 0
