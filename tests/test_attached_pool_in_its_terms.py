"""An attached cluster's workers of several threads are said in that server's terms.

`latency --attach MASTER --protocol http --pool -c 8 --requests-per-connection 0` at PyPI's gunicorn with 2 gthread
workers (--threads 4; load 2.6, Linux 6.18, 2 vCPUs) read the general sentence: 'each is a process of 3-5 threads:
right where they compute one at a time under one lock (Ruby's, CPython's); threads that compute at once (C's,
Go's) ... overlap its requests': the result did not record which program served, so the model could not say. The
attached server now records its program as inspect names it (evidence `program`), and the model says the pool by
the server's own setting (gunicorn's --threads, under CPython's GIL), an event loop where one thread runs every
request (Node's cluster), and the general sentence only for a program this tool does not know."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from cli_runs import run_cli
from conftest import wait_for
from gunicorn_gthread import fetch, gunicorn_gthread  # noqa: F401 (a fixture)
from test_cut_short_run_tails import run

from accept_order.core.spec import ServerSpec
from accept_order.experiments.latency.model_servers import pooled_text
from accept_order.experiments.latency.result import LatencyResult
from accept_order.probes.busy_waits import worker_threads

GUNICORN = "(gunicorn's gthread pool, sized by --threads or threads in its config): right where its handler computes"
GENERAL = "right where they compute one at a time under one lock (Ruby's, CPython's)"


def _attached(program: dict[str, Any] | None, threads: tuple[int, int] = (3, 5)) -> LatencyResult:
    """A run at a master attached by pid (4242) whose 2 workers were processes of `threads` threads as it started."""
    evidence: dict[str, Any] = {"busy_waits": {"span_s": 1.0, "workers": [{"threads": n} for n in threads]}}
    if program is not None:
        evidence["program"] = program
    server = ServerSpec(kind="attached", mode="attached", workers=2, port=18432, attach=(4242,), protocol="http")
    return replace(run("attached", [1000] * 100), server=server, evidence=evidence)


def _said(program: dict[str, Any] | None) -> str:
    said = pooled_text(_attached(program))
    assert said is not None
    return said


def test_each_program_in_its_own_terms() -> None:
    gunicorn = _said({"pid": 4242, "name": "python", "recognised": "gunicorn"})
    assert "each is a process of 3-5 threads " + GUNICORN + ", as CPython's GIL lets one of them" in gunicorn
    assert "Ruby's" not in gunicorn and "Go's" not in gunicorn, gunicorn
    apache = _said({"pid": 4242, "name": "apache2", "recognised": "apache"})
    mpm = "(Apache's ThreadsPerChild, each child's threads under its event or worker MPM)"
    assert f"each is a process of 3-5 threads {mpm}: its threads compute at once" in apache, apache
    puma = _said({"pid": 4242, "name": "ruby", "recognised": "puma"})
    assert "(Puma's pool, sized by 'threads MIN, MAX' in its config or -t MIN:MAX): right where its handler" in puma
    assert "as Ruby's GVL lets one of them compute at a time" in puma and "this tool wrote" not in puma, puma
    node = _said({"pid": 4242, "name": "node", "recognised": "node"})  # Node's cluster: its event loop, no pool
    assert node.endswith("one of which runs every request (its event loop), the others none."), node


def test_a_program_not_known_or_not_recorded_gets_the_general_sentence() -> None:
    for program in (None, {"pid": 4242, "name": "myserver", "recognised": None}):
        assert GENERAL in _said(program)


def test_a_launched_server_keeps_its_own_words() -> None:
    """The launched case is unchanged: the config the tool wrote (launched_pool), not the attached words."""
    launched = replace(_attached(None), server=ServerSpec(kind="gunicorn", mode="select", workers=2).validated())
    said = pooled_text(launched)
    assert said is not None and GENERAL in said and "gthread pool" not in said, said


def _master(worker: int) -> int:
    """The worker's parent, from its own /proc/PID/stat (the field after the command's closing parenthesis)."""
    return int(Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def test_an_attached_gunicorn_gthread_is_said_by_its_threads_setting(
    gunicorn_gthread: tuple[int, list[int]],  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    port, workers = gunicorn_gthread
    master = _master(workers[0])
    # the witness: gunicorn's own command line, as the kernel has it; and a worker whose pool has a thread already
    assert b"gunicorn" in Path(f"/proc/{master}/cmdline").read_bytes()
    fetch(port)
    wait_for(lambda: max(map(_threads, workers)), lambda n: n >= 2, 30, "a gthread worker's pool thread")
    out = tmp_path / "attached.json"
    args = ["latency", "--attach", str(master), "--port", str(port), "--protocol", "http", "--pool", "-c", "4"]
    result = run_cli([*args, "--requests-per-connection", "0", "--duration", "1s", "--json", str(out)], columns=400)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["evidence"]["program"]["recognised"] == "gunicorn", doc["evidence"].get("program")
    assert doc["evidence"]["program"]["pid"] == master
    assert max(worker_threads(doc["evidence"])) >= 2, doc["evidence"].get("busy_waits")  # the premise, as read
    said = " ".join(result.stdout.split())
    assert GUNICORN in said and "CPython's GIL lets one of them compute at a time" in said, said
    assert GENERAL not in said, said
