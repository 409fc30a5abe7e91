"""run --attach of a server whose workers are the threads of one process (HAProxy with nbthread): the tool
attributes connections by fd table, and threads share their process's, so it saw one worker and said
'Verdict: single worker; fairness: Jain 1.000'. Now the report says plainly that per-thread shares cannot be
read from /proc and the counts are the process's, with no fairness figure; which kinds serve with their threads
is the registry's one answer (observe names the threads by the same)."""

from __future__ import annotations

import io
import json
import shutil
import socket
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_cli, wait_for
from rich.console import Console

from accept_order.experiments.order.report import run_report
from accept_order.experiments.order.result import RunResult
from accept_order.servers.kind_notes import threads_note
from accept_order.servers.registry import threads_are_workers

GOLDEN = Path(__file__).parent / "data" / "golden" / "run.json"


def threaded(program: str, count: int = 4, argv: tuple[str, ...] = ()) -> dict[str, object]:
    return {"threads": {"pid": 4242, "program": program, "argv": list(argv), "count": count}}


def test_the_registry_says_whose_threads_are_workers() -> None:
    assert threads_are_workers("haproxy", ["haproxy", "-f", "h.cfg"])
    assert not threads_are_workers("caddy", ["caddy", "run"])  # Go's threads are not Caddy's workers
    assert threads_are_workers("myserver", [])  # a server this tool does not know: per thread, as the kernel
    note = threads_note(threaded("haproxy"))
    assert note is not None and note.startswith("pid 4242 (haproxy) serves with 4 threads")
    assert "the counts are the process's" in note and "share or fairness can" in note
    assert threads_note(threaded("caddy")) is None
    assert threads_note(threaded("haproxy", count=1)) is None
    assert threads_note({}) is None and threads_note({"threads": {"count": "4"}}) is None  # a hand-edited file


def verdict_line(result: RunResult) -> str:
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(run_report(result))
    return next(line for line in console.export_text().splitlines() if line.startswith("Verdict:"))


def test_the_run_report_says_it_instead_of_a_fairness_of_one_worker() -> None:
    base = RunResult.from_dict(json.loads(GOLDEN.read_text()))
    one = replace(base.server, mode="attached", kind="attached", attach=(4242,), workers=1)
    records = tuple(replace(r, worker=0, pid=4242) for r in base.records)  # every one held by the one process
    haproxy = replace(base, server=one, records=records, evidence={**base.evidence, **threaded("haproxy")})
    line = verdict_line(haproxy)
    assert "not read per thread: pid 4242 (haproxy) serves with 4 threads" in line
    assert "Jain" not in line and "max/min" not in line, line
    assert "Jain" in verdict_line(replace(haproxy, evidence={**base.evidence, **threaded("caddy")}))


HAPROXY_CFG = """global
    nbthread 2
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend f
    bind 127.0.0.1:{port}
    http-request return status 200 content-type text/plain string "ok"
"""


def test_run_attach_to_a_threaded_haproxy(tmp_path: Path, free_port: int) -> None:
    binary = shutil.which("haproxy")
    if binary is None:
        pytest.skip("haproxy is not installed")
    config = tmp_path / "haproxy.cfg"
    config.write_text(HAPROXY_CFG.format(port=free_port))
    server = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:

        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", free_port), timeout=1).close()
            except OSError:
                return False
            return True

        wait_for(lambda: (server.poll(), listening()), lambda s: s[0] is not None or s[1], 10.0, "haproxy listening")
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
        out = tmp_path / "run.json"
        args = ["run", "--attach", str(server.pid), "--port", str(free_port), "--protocol", "http", "-n", "6"]
        result = run_cli([*args, "--json", str(out)], columns=400)
        assert result.exit_code == 0, result.output
        line = next(line for line in result.stdout.splitlines() if line.startswith("Verdict:"))
        assert f"pid {server.pid} (haproxy) serves with 2 threads" in line and "Jain" not in line, line
        assert json.loads(out.read_text())["evidence"]["threads"]["count"] == 2
    finally:
        server.terminate()
        server.wait(10)
        if server.stderr is not None:
            server.stderr.close()


def test_the_latency_report_says_it_beside_the_served_per_worker() -> None:
    from accept_order.experiments.latency.report import latency_report
    from accept_order.experiments.latency.result import LatencyResult

    base = LatencyResult.from_dict(json.loads((GOLDEN.parent / "latency.json").read_text()))
    console = Console(width=400, record=True, file=io.StringIO())
    console.print(latency_report(replace(base, evidence={**base.evidence, **threaded("haproxy")})))
    assert "pid 4242 (haproxy) serves with 4 threads, and threads share one fd table" in console.export_text()
