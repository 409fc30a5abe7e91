"""tests/conftest.py's collector settings: the test process collects less often (TEST_GC_THRESHOLDS), and a process
forked from a test (a built-in server's workers) has the interpreter's own thresholds back, as under the CLI, and
the objects it inherited frozen (never walked by its collections), the test process's own thawed again."""

from __future__ import annotations

import ast
import gc
import os
import subprocess
import sys

from conftest import TEST_GC_THRESHOLDS


def test_the_test_process_collects_less_often() -> None:
    assert gc.get_threshold() == TEST_GC_THRESHOLDS


def _in_a_child(report: str) -> object:
    """What `report` (an expression) is in a child forked here, which leaves at once whatever happens in it."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            try:
                said = repr(eval(report))  # noqa: S307 - the tests' own expressions
            except BaseException as exc:  # noqa: BLE001 - said to the parent, which fails on it
                said = repr(f"raised {exc!r}")
            os.write(write, said.encode())
        finally:
            os._exit(0)  # no pytest machinery after a fork
    os.close(write)
    with os.fdopen(read) as child:
        got = child.read()
    assert os.waitpid(pid, 0)[1] == 0
    return ast.literal_eval(got)


def test_a_forked_child_has_the_interpreters_defaults() -> None:
    defaults = subprocess.run(
        [sys.executable, "-c", "import gc; print(*gc.get_threshold())"], capture_output=True, text=True, check=True
    ).stdout.split()
    got = _in_a_child("gc.get_threshold()")
    assert isinstance(got, tuple), got
    assert [str(t) for t in got] == defaults != [str(t) for t in TEST_GC_THRESHOLDS]


def test_a_second_import_of_conftest_keeps_the_defaults_for_forked_children() -> None:
    """conftest imported again (as a plugin and as `conftest` both) must not take the raised thresholds for the
    interpreter's defaults, nor register a second hook that would give forked children the raised ones."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("conftest_again", Path(__file__).with_name("conftest.py"))
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
    test_a_forked_child_has_the_interpreters_defaults()


def test_a_forked_child_inherits_the_test_process_frozen_and_the_test_process_thaws() -> None:
    assert gc.get_freeze_count() == 0
    inherited = _in_a_child("gc.get_freeze_count()")
    assert isinstance(inherited, int) and inherited > 10_000, inherited  # pytest's, the package's, the libraries'
    assert gc.get_freeze_count() == 0  # thawed here: this process collects its own objects as before


def test_a_child_that_forks_again_keeps_what_it_inherited_frozen() -> None:
    """A run's supervisor forks its workers: its own fork neither thaws what it inherited nor freezes more."""
    said = _in_a_child("(gc.get_freeze_count(), _in_a_child('0'), gc.get_freeze_count())")
    assert isinstance(said, tuple), said
    before, _, after = said
    assert before > 10_000 and after == before, (before, after)
