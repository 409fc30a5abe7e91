"""An experiment script (experiments/NAME.py) run in the test's own process, as `python experiments/NAME.py ARGS`
would run it: its own directory first on sys.path, sys.argv as the command line, __name__ "__main__", stdout and
stderr captured, the status its SystemExit carries. For what a script decides before it starts anything (its
arguments): a process of its own costs ~0.3-0.6 CPU-s of interpreter and imports and asserts nothing more there.
An exception other than SystemExit propagates and fails the test, as the traceback it would print would."""

from __future__ import annotations

import contextlib
import io
import runpy
import subprocess
import sys
from pathlib import Path

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"


def run_script_in_process(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    path = EXPERIMENTS / script
    out, err = io.StringIO(), io.StringIO()
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv, sys.path[:0] = [str(path), *args], [str(EXPERIMENTS)]
    code: int | str | None = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            runpy.run_path(str(path), run_name="__main__")
    except SystemExit as exc:
        code = exc.code
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
    if isinstance(code, str):  # sys.exit("message"): printed on stderr, status 1, as the interpreter does
        err.write(code + "\n")
        code = 1
    return subprocess.CompletedProcess([sys.executable, str(path), *args], code or 0, out.getvalue(), err.getvalue())
