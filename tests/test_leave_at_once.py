"""cli/leave.py: the command ends without the interpreter's teardown (10-17 ms of a run, issue 30), keeping what
Python's own exit does that anyone sees: the status, the atexit handlers, the standard streams whole; and it takes
Python's way out wherever that could differ (a status that is text, a thread still running, a stream that cannot
be flushed). Each case runs in a process of its own: leaving ends the process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "accept-order-python"
# Marks what ran at the process's end: an atexit handler (file "atexit") and the __del__ of an object that only the
# interpreter's teardown frees (file "teardown"): held by the sys module, made by the atexit handler that runs last,
# after the command froze the garbage collector's objects (cli/app.py), whose cycles the teardown never frees.
MARKS = """
import atexit, os, sys
marks = sys.argv[1]

class Teardown:
    def __del__(self, open=open, where=os.path.join(marks, "teardown")):  # builtins are gone by then
        open(where, "w").close()

atexit.register(lambda: setattr(sys, "teardown_witness", Teardown()))
atexit.register(lambda: open(os.path.join(marks, "atexit"), "w").close())
"""
COMMAND = (
    MARKS
    + """
import runpy
sys.argv = ["accept-order", *sys.argv[2:]]
runpy.run_path(SCRIPT, run_name="__main__")
"""
)
MODULE = (
    MARKS
    + """
import runpy
sys.argv = ["accept-order", *sys.argv[2:]]
runpy.run_module("accept_order", run_name="__main__", alter_sys=True)
"""
)


def marks_of(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def python(code: str, *args: str, stdout: int = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-c", code, *args]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout on a pipe is buffered
    return subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120, check=False, env=env)


@pytest.mark.skipif(sys.platform != "linux", reason="the built-in workers' modes are Linux's")
@pytest.mark.parametrize("entry", ["script", "python -m"])
def test_a_run_leaves_at_once_with_its_report_whole_and_its_atexit_handlers_run(tmp_path: Path, entry: str) -> None:
    code = COMMAND.replace("SCRIPT", repr(str(SCRIPT))) if entry == "script" else MODULE
    done = python(code, str(tmp_path), "run", "--mode", "epoll", "-n", "2")
    assert done.returncode == 0, done.stderr
    assert "served 2" in done.stdout and done.stdout.rstrip().splitlines()[-1].startswith("  affinity:")
    assert marks_of(tmp_path) == {"atexit"}  # the handler ran; the teardown did not


def test_a_usage_error_keeps_its_status(tmp_path: Path) -> None:
    done = python(COMMAND.replace("SCRIPT", repr(str(SCRIPT))), str(tmp_path), "run", "--mode", "no-such-mode")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert marks_of(tmp_path) == {"atexit"}


def test_a_status_in_words_is_pythons_to_print(tmp_path: Path) -> None:
    done = python(MARKS + "from accept_order.cli.leave import leave\nleave('a reason')\n", str(tmp_path))
    assert (done.returncode, done.stderr) == (1, "a reason\n")
    assert marks_of(tmp_path) == {"atexit", "teardown"}  # Python's exit, whole


def test_a_thread_still_running_is_waited_for(tmp_path: Path) -> None:
    """The thread finishes its work (a line on stdout) only once the test has seen the command reach leave()."""
    code = MARKS + (
        "import threading\n"
        "from accept_order.cli.leave import leave\n"
        "go = int(sys.argv[2])\n"
        "worker = threading.Thread(target=lambda: os.read(go, 1) and print('thread done', flush=True))\n"
        "worker.start()\n"
        "print('leaving', flush=True)\n"
        "leave(0)\n"
    )
    readable, writable = os.pipe()
    with subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path), str(readable)],
        stdout=subprocess.PIPE,
        text=True,
        pass_fds=(readable,),
    ) as proc:
        os.close(readable)
        assert proc.stdout is not None
        assert proc.stdout.readline() == "leaving\n"
        os.write(writable, b"g")
        os.close(writable)
        rest = proc.stdout.read()
        assert proc.wait(timeout=60) == 0
    assert rest == "thread done\n"


def test_a_stdout_that_cannot_be_flushed_is_pythons_to_report(tmp_path: Path) -> None:
    readable, writable = os.pipe()
    os.close(readable)  # the reader went away before the command's last, buffered, line
    code = MARKS + "from accept_order.cli.leave import leave\nprint('the last line')\nleave(0)\n"
    try:
        done = python(code, str(tmp_path), stdout=writable)
    finally:
        os.close(writable)
    assert done.returncode == 120 and "BrokenPipeError" in done.stderr, done.stderr


@pytest.mark.parametrize(("entry", "prog_name"), [("script", None), ("python -m", "accept-order")])
def test_both_entry_points_run_the_command_through_one_function(tmp_path: Path, entry: str, prog_name: str) -> None:
    """The script and `python -m accept_order` each hand the whole run to cli.leave.main_and_leave (not a copy of its
    lines of their own), with the name the usage lines say: the script's from argv[0], the module's given."""
    record = (
        "import accept_order.cli.leave as leaving\n"
        "leaving.main_and_leave = lambda prog_name=None: print('handed to main_and_leave:', prog_name) or sys.exit(0)\n"
    )
    code = (COMMAND.replace("SCRIPT", repr(str(SCRIPT))) if entry == "script" else MODULE).replace(
        "import runpy\n", "import runpy\n" + record, 1
    )
    done = python(code, str(tmp_path), "--version")
    assert (done.returncode, done.stdout) == (0, f"handed to main_and_leave: {prog_name}\n"), done.stderr
