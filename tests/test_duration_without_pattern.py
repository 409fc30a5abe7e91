"""cli/types.py parse_duration reads a duration spelled as digits and a unit (every default a run converts) without
the duration pattern, exactly as the pattern reads it; a run compiles no pattern for its defaults."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest

from accept_order.cli import types
from accept_order.cli.types import _DURATION, parse_duration


def by_pattern(text: str) -> tuple[str, str | None] | None:
    match = re.match(_DURATION, text)
    return (match.group(1), match.group(2)) if match else None


def outcome(text: str) -> str:
    try:
        return repr(parse_duration(text, bare=None, zero=True))
    except ValueError as exc:
        return f"ValueError: {exc}"


def test_every_short_spelling_reads_as_the_pattern_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    pieces = ["", "0", "5", "05", "12", ".", "1.5", " ", "\n", "s", "ms", "us", "µs", "m", "h", "ss", "x", "٣", "²"]
    spellings = {"".join(p) for n in (1, 2, 3) for p in itertools.product(pieces, repeat=n)}
    for text in ("0", "0ms", "500ms", "5s", "2m", "1h", "7us", "7µs"):  # the plain ones: no pattern needed
        assert types._plain_duration(text) == by_pattern(text), text
    fast = {text: outcome(text) for text in spellings}
    monkeypatch.setattr(types, "_plain_duration", lambda text: None)  # the pattern alone, as before
    assert {text: outcome(text) for text in spellings} == fast


SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "accept-order-python"
# Runs the command's own script and writes, at its exit, whether re's cache holds the duration pattern.
PROBE = """
import atexit, re, runpy, sys
out = sys.argv[1]

def compiled():
    types = sys.modules.get("accept_order.cli.types")
    return "yes" if types is not None and any(key[1] == types._DURATION for key in re._cache) else "no"

atexit.register(lambda: open(out, "w").write(compiled()))
sys.argv = ["accept-order", *sys.argv[2:]]
runpy.run_path(SCRIPT, run_name="__main__")
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the built-in workers' modes are Linux's")
def test_a_run_with_its_defaults_compiles_no_duration_pattern(tmp_path: Path) -> None:
    out = tmp_path / "compiled.txt"
    argv = [sys.executable, "-c", PROBE.replace("SCRIPT", repr(str(SCRIPT))), str(out), "run", "--mode", "epoll"]
    done = subprocess.run([*argv, "-n", "2"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "served 2" in done.stdout and out.read_text() == "no"
