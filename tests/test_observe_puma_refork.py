"""observe of Puma's --fork-worker across a refork credits each new worker its own accepts.

Debian's puma 5.6.5 with --fork-worker forks workers 1.. from worker 0, and a refork (pumactl refork, or after
fork_worker's request count) replaces them with new children of worker 0. observe watched the workers it chose and
looked for newcomers once, after the window, among processes named as the workers ('puma') that are not a worker's
child: the new workers are named 'puma wrkr fork' (the thread that forked them) and are worker 0's children, so they
were said nowhere, and what they accepted (78 of 200 connections by hand) was in no count. Now the accept watch counts
Puma's server threads by name ('puma srv', the kind's listener thread) and each new process it names is read while
it runs (newcomers.py): the result names each, with its accepts.

The witnesses are Puma's: each reply names the pid that served it (one connection a request), and its control
server's stats (pumactl) name the workers before and after the refork, worker 0 the same."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from conftest import wait_for
from network import pid_answering
from observed_under import observed_under
from puma_by_hand import TIMEOUT_S, control, puma, pumactl, stats

WORKERS = 3
REQUESTS = 30  # before the refork and after it
APP = 'run lambda { |env| [200, {"Content-Type" => "text/plain"}, ["pid #{Process.pid}"]] }\n'

pytestmark = pytest.mark.skipif(shutil.which("puma") is None, reason="needs Debian's puma (apt-get install puma)")


def _workers(control: int, phase: int) -> list[int]:
    """The workers' pids by index once every one is booted in `phase` (0 at the start, 1 after a refork)."""

    def booted(stats: dict[str, object] | None) -> bool:
        status = stats.get("worker_status") if stats else None
        return (
            isinstance(status, list)
            and len(status) == WORKERS
            and all(w["booted"] and (w["index"] == 0 or w["phase"] == phase) for w in status)
        )

    read = wait_for(lambda: stats(control), booted, TIMEOUT_S, f"pumactl stats: every worker booted in phase {phase}")
    assert read is not None
    return [w["pid"] for w in sorted(read["worker_status"], key=lambda w: w["index"])]  # type: ignore[attr-defined]


def test_a_refork_in_the_window_names_each_new_worker_with_its_accepts(tmp_path: Path, free_port: int) -> None:
    served: Counter[int] = Counter()
    after: list[int] = []
    options = ("-w", str(WORKERS), "--fork-worker", "-t", "1:1", *control(free_port))
    with puma(tmp_path, APP, *options) as (proc, _, port):
        before = _workers(free_port, 0)

        def drive() -> None:
            for _ in range(REQUESTS):
                served[pid_answering(port)] += 1
            assert pumactl(free_port, "refork").returncode == 0
            after.extend(_workers(free_port, 1))
            for _ in range(REQUESTS):
                served[pid_answering(port)] += 1

        result = observed_under(drive, port=port)
    if not result.traced:
        pytest.skip(f"no kernel count of who accepts: {result.notes}")
    assert after[0] == before[0] and not set(after[1:]) & set(before), (before, after)  # the refork, as Puma says
    assert result.master == proc.pid, result.master  # worker 0's parent, not worker 0: it serves among the others
    assert set(served) <= {*before, *after}, served
    # the workers watched: their accepts as their replies say
    assert {w.pid: w.accepts for w in result.workers} == {pid: served[pid] for pid in before}, (result.workers, served)
    reload = result.reloaded
    assert reload is not None, result.notes
    assert set(reload.pids) == set(after[1:]), (reload, after)
    assert dict(zip(reload.pids, reload.accepts, strict=True)) == {pid: served[pid] for pid in reload.pids}, (
        reload,
        served,
    )
    assert sum(reload.accepts) + sum(w.accepts or 0 for w in result.workers) == 2 * REQUESTS, (reload, result.workers)
    assert any(note.startswith("puma started pids ") for note in result.notes), result.notes
    # the workers the refork replaced: gone, and what replaced them said counted apart, not 'not watched'
    exited = [note for note in result.notes if note.startswith(f"worker 1 ({before[1]}) exited")]
    assert exited and "are not among the workers above: the note on them says" in exited[0], result.notes
