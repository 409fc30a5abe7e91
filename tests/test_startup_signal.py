"""A Ctrl-C while the package itself is imported, before cli.main installs the latch, is held from the
package's first statement (core/startup.py): one line and 130, no KeyboardInterrupt traceback (issue 27 §2).
Imported as a library, the package leaves SIGINT alone.

The signal is sent from an import hook at a chosen module, so the moment is exact: no timing.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from accept_order.core import startup

# The console script's import, with a real SIGINT sent to the process when `module` is about to be imported.
AT_IMPORT = """
import os, signal, sys
module = sys.argv[1]
class Interrupt:
    def find_spec(self, name, path, target=None):
        if name == module:
            os.kill(os.getpid(), signal.SIGINT)  # delivered at once: Python runs the handler right after
        return None
sys.meta_path.insert(0, Interrupt())
sys.argv = ["/usr/local/bin/accept-order", "show", "nothing.json"]
from accept_order.cli import main
main()
"""


@pytest.mark.parametrize("module", ["accept_order.core.version", "accept_order.cli", "accept_order.core.signals"])
def test_a_sigint_while_the_package_is_imported_is_one_line_and_130(module: str) -> None:
    proc = subprocess.run([sys.executable, "-c", AT_IMPORT, module], capture_output=True, text=True, timeout=60)
    assert proc.stderr.splitlines() == ["accept-order: error: interrupted while starting"], proc.stderr
    assert proc.returncode == 130
    assert proc.stdout == ""


def test_imported_as_a_library_the_package_leaves_sigint_alone() -> None:
    code = (
        "import signal, sys\n"
        "sys.argv = ['my-tool']\n"
        "import accept_order.cli\n"
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout == "True\n", proc.stderr


@pytest.mark.parametrize(
    ("argv", "orig_argv", "command"),
    [
        (["/work/.venv/bin/accept-order", "run"], ["python3", "/work/.venv/bin/accept-order", "run"], True),
        (["-m"], ["python3", "-X", "importtime", "-m", "accept_order", "run"], True),
        (["-m"], ["python3", "-m", "pytest", "accept_order"], False),
        (["/usr/bin/my-tool"], ["python3", "/usr/bin/my-tool"], False),
        (["-c"], ["python3", "-c", "import accept_order"], False),
    ],
)
def test_the_command_is_told_from_a_library_use(
    argv: list[str], orig_argv: list[str], command: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", argv)
    monkeypatch.setattr(sys, "orig_argv", orig_argv)
    assert startup._is_command() is command


def test_a_sigint_ignored_from_the_start_is_held_as_the_latch_will_take_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The latch (core/signals.install) handles SIGINT even when the process inherited it ignored (a script's
    background job, `setsid accept-order ... &`); start-up does the same, so that a `kill -INT` at 20 ms and
    at 2 s end the command alike (the review found the first ignored and the second 130)."""
    monkeypatch.setattr(sys, "argv", ["accept-order"])
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        startup.hold()
        assert signal.getsignal(signal.SIGINT) is startup._hold
    finally:
        signal.signal(signal.SIGINT, previous)
