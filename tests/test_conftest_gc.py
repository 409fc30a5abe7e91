"""tests/conftest.py's collector settings: the test process collects less often (TEST_GC_THRESHOLDS), and a process
forked from a test (a built-in server's workers) has the interpreter's own thresholds back, as under the CLI."""

from __future__ import annotations

import gc
import os
import subprocess
import sys

from conftest import TEST_GC_THRESHOLDS


def test_the_test_process_collects_less_often() -> None:
    assert gc.get_threshold() == TEST_GC_THRESHOLDS


def test_a_forked_child_has_the_interpreters_defaults() -> None:
    defaults = subprocess.run(
        [sys.executable, "-c", "import gc; print(*gc.get_threshold())"], capture_output=True, text=True, check=True
    ).stdout.split()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: say its thresholds and leave at once (no pytest machinery after a fork)
        os.close(read)
        os.write(write, " ".join(map(str, gc.get_threshold())).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as said:
        got = said.read().split()
    assert os.waitpid(pid, 0)[1] == 0
    assert got == defaults != [str(t) for t in TEST_GC_THRESHOLDS]


def test_a_second_import_of_conftest_keeps_the_defaults_for_forked_children() -> None:
    """conftest imported again (as a plugin and as `conftest` both) must not take the raised thresholds for the
    interpreter's defaults, nor register a second hook that would give forked children the raised ones."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("conftest_again", Path(__file__).with_name("conftest.py"))
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    test_a_forked_child_has_the_interpreters_defaults()
