"""The kernel's accept count of a master attached by pid, where BTF is there but bpftrace cannot read a task's parent
(a kernel whose task_struct it does not know): the whole count was lost ('program failed to load'), where the
attached workers' own accepts could still be counted. It now starts again without following the master, and says
so. And h2o attached by pid: its num-threads event loops are the model's servers, not its every thread (a timer
thread serves none)."""

from __future__ import annotations

import os
import select
import shutil
import socket
import stat
from dataclasses import replace
from pathlib import Path

import pytest
from test_attached_threads_model import attached, text

from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_servers import model_servers
from accept_order.experiments.latency.report import latency_report
from accept_order.probes import accept_program
from accept_order.probes.accepts import AcceptCounter
from accept_order.servers.attached import _loops

IO_TIMEOUT_S = 10.0
BPFTRACE = shutil.which("bpftrace")

# bpftrace as it fails where the kernel's task_struct has no field by that name (its own words, bpftrace 0.17)
REFUSING = """#!/bin/sh
case "$*" in
*real_parent*)
    echo "stdin:2:38-60: ERROR: Struct/union of type 'struct task_struct' does not contain a field named \
'real_parent'" >&2
    exit 1 ;;
esac
exec {real} "$@"
"""


@pytest.mark.skipif(os.geteuid() != 0 or BPFTRACE is None, reason="needs root and bpftrace")
def test_a_count_whose_parent_filter_is_refused_counts_the_pids_asked_about(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "bpftrace"
    fake.write_text(REFUSING.format(real=BPFTRACE))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(accept_program, "BTF", str(tmp_path))  # BTF there, whatever this kernel has
    with socket.create_server(("127.0.0.1", 0)) as listener, AcceptCounter([os.getpid()], os.getppid()) as counter:
        assert counter.children_of == os.getppid() and "real_parent" in counter.program()
        counter.start()
        with socket.create_connection(listener.getsockname(), timeout=IO_TIMEOUT_S):
            assert select.select([listener], [], [], IO_TIMEOUT_S)[0]
            conn, _ = listener.accept()
            conn.close()
        counts = counter.stop()
    assert counts.available, counts.why
    assert counts.counts == {os.getpid(): 1}, counts
    assert counter.children_of is None  # the report says the count could not follow the master's children
    assert f"followed none of pid {os.getppid()}'s other children: bpftrace refused (" in counts.why, counts.why
    assert "does not contain a field named 'real_parent'" in counts.why
    assert "followed" not in counts.evidence(counter.children_of)


def test_h2os_event_loops_are_the_servers_its_timer_thread_is_not() -> None:
    """h2o with num-threads 2 has 3 threads (its timer's besides): 2 servers; said beside the model."""
    run = attached("h2o", 3)
    run = replace(run, evidence={"threads": {**run.evidence["threads"], "loops": 2}})
    servers = model_servers(run)
    assert servers.count == 2, servers
    model = predict(run)
    assert model is not None and model.workers == 2, model
    said = text(latency_report(replace(run, model=model)))
    assert "Model: pid 4242 (h2o)'s 2 event loops are the servers counted (a thread each" in said, said
    before = predict(attached("h2o", 3))  # a file from before loops were counted: not judged, not 3 servers
    assert before is None


def test_the_event_loops_of_a_process_are_its_epolls_that_watch_the_listener() -> None:
    """Counted from the fd table, whatever each thread is doing at the look (busy under load, or asleep)."""
    import select as sel

    with socket.create_server(("127.0.0.1", 0)) as listener, socket.create_server(("127.0.0.1", 0)) as other:
        loops = [sel.epoll() for _ in range(3)]
        try:
            loops[0].register(listener, sel.EPOLLIN)
            loops[1].register(listener, sel.EPOLLIN | sel.EPOLLEXCLUSIVE)
            loops[2].register(other, sel.EPOLLIN)  # a loop, but of another listener
            inode = os.fstat(listener.fileno()).st_ino
            assert _loops(os.getpid(), {inode}) == (2, 3)
            loops[1].unregister(listener)  # h2o at its max-connections: the loop lets go of the listener
            assert _loops(os.getpid(), {inode}) == (1, 3)
        finally:
            for loop in loops:
                loop.close()


def test_h2o_whose_loops_let_go_of_the_listener_is_not_modelled_with_fewer_loops() -> None:
    """h2o takes the listener out of a loop's epoll at its max-connections (num-threads 4 at max-connections 6
    under 6 connections: 2 of 4 epolls watched it in 300 of 300 looks): attached then, it was modelled as 2
    servers. Its epolls are 4 and every loop still serves the connections it holds: not judged, and said why."""
    run = attached("h2o", 5)
    run = replace(run, evidence={"threads": {**run.evidence["threads"], "loops": 2, "epolls": 4}})
    servers = model_servers(run)
    assert servers.count is None, servers
    assert predict(run) is None
    assert servers.why.startswith("2 of pid 4242 (h2o)'s 4 epolls watched the listener as the run started"), servers
    assert "max-connections" in servers.why
    none = replace(run, evidence={"threads": {**run.evidence["threads"], "loops": 0, "epolls": 4}})
    assert model_servers(none).why.startswith("0 of pid 4242 (h2o)'s 4 epolls"), model_servers(none)
    every = replace(run, evidence={"threads": {**run.evidence["threads"], "loops": 4, "epolls": 4}})
    assert model_servers(every).count == 4
