"""inspect of Puma's --fork-worker: Debian's puma 5.6.5 boots worker 0 from the master and forks the other workers
from worker 0, so worker 0 is their parent, and it serves too (its replies name it). inspect read 'puma, master pid
<worker 0>, 3 workers' of '-w 4 --fork-worker': worker 0's 'puma srv' thread selects on the listener as its children's
do, and a parent in select was left out as a master watching its own pipe (gunicorn's arbiter), the real master read
'process'. Its select set is read from memory (as root) and names the listener: it is a worker among its children.

The witnesses are Puma's own: its boot log and its control server's stats (pumactl) name the workers' pids, index 0
first; /proc says worker 0 is the others' parent (the premise) and that each worker's 'puma srv' waits in select."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import run_cli, wait_for
from puma_by_hand import TIMEOUT_S, control, puma
from puma_by_hand import stats as puma_stats

WORKERS = 3
SELECTS = {"23", "270"}  # x86_64's select and pselect6: what Ruby's IO.select waits in
APP = 'run lambda { |env| [200, {"Content-Length" => "2"}, ["ok"]] }\n'

pytestmark = [
    pytest.mark.skipif(shutil.which("puma") is None, reason="needs Debian's puma (apt-get install puma)"),
    pytest.mark.skipif(os.uname().machine != "x86_64", reason="reads x86_64's syscall numbers"),
    pytest.mark.skipif(os.geteuid() != 0, reason="a select set is read from memory as root only"),
]


def _server_thread_call(pid: int) -> str | None:
    """What worker `pid`'s 'puma srv' thread waits in now (its syscall number); None where it has none (yet)."""
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            if (task / "comm").read_text().strip() == "puma srv":
                return (task / "syscall").read_text().split(" ", 1)[0]
    except OSError:
        return None
    return None


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


@contextmanager
def _forking_puma(directory: Path, port: int) -> Iterator[tuple[int, list[int]]]:
    """Puma -w WORKERS --fork-worker with a control server on `port`, until the block ends (its session killed):
    (the master's pid, the workers' pids by index, as its stats name them)."""
    with puma(directory, APP, "-w", str(WORKERS), "--fork-worker", "-t", "1:1", *control(port)) as (proc, log, _):
        booted = r"Worker (\d+) \(PID: (\d+)\) booted"
        log.wait_for("(?s)" + ".*".join([booted] * WORKERS), TIMEOUT_S)
        logged = {int(i): int(pid) for i, pid in re.findall(booted, log.text)}
        stats = wait_for(
            lambda: puma_stats(port),
            lambda s: s is not None and s.get("booted_workers") == WORKERS,
            TIMEOUT_S,
            "pumactl stats naming every worker booted",
        )
        assert stats is not None
        workers = [w["pid"] for w in sorted(stats["worker_status"], key=lambda w: w["index"])]
        assert workers == [logged[i] for i in range(WORKERS)], (workers, log.text)  # the two witnesses agree
        yield proc.pid, workers


def test_inspect_reads_worker_0_of_a_fork_worker_puma_as_a_worker(tmp_path: Path, free_port: int) -> None:
    with _forking_puma(tmp_path, free_port) as (master, workers):
        first, others = workers[0], workers[1:]
        assert _ppid(first) == master and {_ppid(pid) for pid in others} == {first}, workers  # --fork-worker's tree
        wait_for(
            lambda: [_server_thread_call(pid) for pid in workers],
            lambda calls: set(calls) <= SELECTS,
            TIMEOUT_S,
            "every worker's server thread in select, on the listener",
        )
        saved = tmp_path / "inspect.json"
        result = run_cli(["inspect", str(master), "--samples", "1", "--json", str(saved)])
    assert result.exit_code == 0, result.output
    read = json.loads(saved.read_text())
    roles = {row["pid"]: row["role"] for row in read["processes"]}
    assert roles == {master: "master", **{pid: "worker" for pid in workers}}, result.output
    assert sorted(u["pid"] for u in read["units"] if u["role"] == "worker") == sorted(workers), result.output
    assert read["mechanism"]["name"] == "select" and read["mechanism"]["herds"] is True, read["mechanism"]
    assert f"{len(workers)} workers sleep in pselect6()" in " ".join(read["mechanism"]["evidence"]), read["mechanism"]
    said = f"here with --fork-worker: the other workers were forked from worker 0 (pid {first}), which serves too"
    assert said in read["mechanism"]["why"], read["mechanism"]["why"]
    assert f"puma, master pid {master}, {WORKERS} workers" in result.output.splitlines()[0], result.output
