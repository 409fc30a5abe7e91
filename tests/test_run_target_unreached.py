"""`run --target` of an address nobody listens on says so in one line, exit 1, as latency, sweep, burst and ramp do.

It printed a whole report, 'Sequence: x x x x x x', '6 of 6 connections failed: 6 x ECONNREFUSED', 'Verdict: nothing
served' with a 'Why:' of the pattern read from the replies, and exited 0; the loads' commands had said 'nothing
answers there' (servers/remote.RemoteServer.reached) since b2ff60f.
"""

from __future__ import annotations

import socket
import threading

from cli_runs import ran_in_process
from conftest import run_cli

from accept_order.core.measures import ConnectionRecord
from accept_order.core.spec import ServerSpec
from accept_order.servers.remote import RemoteServer


def test_run_at_a_target_where_nothing_listens_is_one_line(unlistened_port: int) -> None:
    port = unlistened_port
    # in this process: run --target drives its connections from the command's own process (no child to write to a
    # stderr of its own), so the stderr read here is all the command wrote
    ran = ran_in_process("run", "-w", "2", "-n", "3", "--target", f"127.0.0.1:{port}")
    assert ran.returncode == 1, ran.stderr
    [line] = ran.stderr.splitlines()
    assert line == f"accept-order: error: --target 127.0.0.1:{port}: nothing answers there (3 × ECONNREFUSED " + (
        "(Connection refused))"
    )
    assert ran.stdout == ""


def test_a_target_that_answered_once_keeps_its_report() -> None:
    """One answer is a server there: its refusals after are a measurement (the loads' rule)."""
    remote = RemoteServer(ServerSpec(kind="remote", mode="target", workers=2, port=9))
    refused = ConnectionRecord(seq=1, worker=None, pid=None, start_us=0, latency_us=1, error="ECONNREFUSED: refused")
    served = ConnectionRecord(seq=0, worker=0, pid=7, start_us=0, latency_us=1)
    assert list(remote.reached_by([served, refused])) == [served, refused]


def test_a_run_at_a_target_that_answers_still_reports() -> None:
    """A line server that names its one worker, as `accept-order serve` answers: the run's report, exit 0."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def answer(count: int) -> None:
            for _ in range(count):
                conn, _ = listener.accept()
                with conn:
                    conn.sendall(b"worker 0 pid 4242\n")

        server = threading.Thread(target=answer, args=(2,), daemon=True)
        server.start()
        result = run_cli(["run", "-w", "1", "-n", "2", "--target", f"127.0.0.1:{port}"])
        server.join(timeout=30)
    assert result.exit_code == 0, result.output
    assert "Sequence: 0 0" in result.stdout and "served 2, failed 0" in result.stdout
