"""core/text.py has_controls answers printable text without compiling the control-character pattern (~2 ms of a
run's report: its table rules and "µs" are not ASCII), and answers as the pattern does for every character."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from accept_order.core.text import controls, escape_controls, has_controls


def test_every_character_the_pattern_matches_is_not_printable() -> None:
    """The rule the fast path rests on, over all of Unicode: a printable character is never one to escape, so a
    printable text has none; and each character is answered as the pattern answers it."""
    pattern = controls()
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        matched = pattern.match(char) is not None
        assert not (matched and char.isprintable()), hex(code)
        assert has_controls(char) == matched, hex(code)
    assert has_controls("─── 0.2 µs ───") is False and has_controls("µs\u202e") is True
    assert escape_controls("worker\u2028 0 \u00a0") == "worker\\u2028 0 \u00a0"  # a no-break space is not escaped


SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "accept-order-python"
# Runs the command's own script and writes, at its exit, how many patterns controls() has compiled (0 or 1).
PROBE = """
import atexit, runpy, sys
out = sys.argv[1]

def compiled():
    text = sys.modules.get("accept_order.core.text")
    return str(text.controls.cache_info().currsize if text is not None else -1)

atexit.register(lambda: open(out, "w").write(compiled()))
sys.argv = ["accept-order", *sys.argv[2:]]
runpy.run_path(SCRIPT, run_name="__main__")
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the built-in workers' modes are Linux's")
def test_a_runs_report_compiles_no_control_pattern(tmp_path: Path) -> None:
    out = tmp_path / "compiled.txt"
    argv = [sys.executable, "-c", PROBE.replace("SCRIPT", repr(str(SCRIPT))), str(out), "run", "--mode", "epoll"]
    done = subprocess.run([*argv, "-n", "2"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "─" in done.stdout and "served 2" in done.stdout  # the report, its table's rule with it, was printed
    assert out.read_text() == "0"
