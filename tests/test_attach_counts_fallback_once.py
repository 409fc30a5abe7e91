"""The kernel's accept count of a master attached by pid starts bpftrace again without following the master's
children only where it refused to read a task's parent (test_attach_counts_fallback.py). It did so on any failure
to load: a program refused for another reason (the verifier, locked memory) was run twice, and the report blamed
the parent field ('followed none of pid N's other children: bpftrace refused (...)') for a failure of its own."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from accept_order.probes import accept_program
from accept_order.probes.accept_program import refused_parent
from accept_order.probes.accepts import AcceptCounter

# bpftrace failing for a reason of its own, whatever the program (its words where the verifier refuses a program)
FAILING = """#!/bin/sh
echo run >> {runs}
echo "ERROR: Error loading program: tracepoint:syscalls:sys_exit_accept4 (try -v)" >&2
exit 1
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="the counter runs bpftrace only as root")
def test_a_count_that_fails_to_load_for_another_reason_is_not_run_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    fake = tmp_path / "bpftrace"
    fake.write_text(FAILING.format(runs=runs))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(accept_program, "BTF", str(tmp_path))  # BTF there: the count follows the master's children
    with AcceptCounter([os.getpid()], os.getppid()) as counter:
        assert counter.children_of == os.getppid()
        counter.start()
        counts = counter.stop()
    assert runs.read_text().splitlines() == ["run"]  # once: the same program would fail again the same way
    assert not counts.available
    assert counts.why.startswith("program failed to load (bpftrace exit 1): ERROR: Error loading program"), counts
    assert "followed none" not in counts.why, counts.why


def test_the_parent_fields_refusals_are_told_from_other_failures() -> None:
    warning = b"ERROR: Unknown error -1: couldn't set RLIMIT_MEMLOCK for bpftrace.\n"
    field = b"stdin:2:38-60: ERROR: Struct/union of type 'struct task_struct' does not contain a field named 'x'\n"
    assert refused_parent(warning + field)
    assert refused_parent(b"stdin:2:38-60: ERROR: Unknown struct/union: 'struct task_struct'\n")
    # the program's own line, echoed under an unrelated error, names the field: only the first error counts
    other = b"ERROR: Error loading program: tracepoint:syscalls:sys_exit_accept4 (try -v)\n"
    assert not refused_parent(warning + other + b"/curtask->real_parent->tgid == 1/\n")
    assert not refused_parent(b"")
