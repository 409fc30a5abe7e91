"""Review RA of 5ebdf1e and 2cf45e6 (latency --attach across a reload; HAProxy's threads in the model).

1. The sentence for served connections the kernel's count could not place gave one reason, 'this kernel lets no
   trace follow a master's children', also where the count had followed them (BTF here) or where the one process
   attached is itself the worker: `latency --attach` of `accept-order serve -m io_uring -w 2` read 'the table places
   0 of the 2,000 connections served: the other 2,000 were accepted by processes that were not attached (...: this
   kernel lets no trace follow a master's children)', while its own two workers accepted every one through io_uring,
   which makes no accept call for the tracepoint to see.
2. The model counted every thread of a process it does not know as a server ('each accepts and serves'): a Python
   server that accepts and serves on its main thread beside an idle thread was modelled as 2 workers (1 before)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_cli
from test_attached_reload import MASTER, OLD, attached, text
from test_attached_threads_model import attached as threaded_run
from test_golden import GOLDEN

from accept_order.core.protocol import ABORTED
from accept_order.core.spec import ServerSpec
from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_servers import model_servers
from accept_order.experiments.latency.report import latency_report
from accept_order.probes import accept_program
from accept_order.probes.accepts import AcceptCounter

NO_FOLLOW = "this kernel lets no trace follow a master's children"


def test_a_count_that_followed_the_masters_children_does_not_blame_the_kernel() -> None:
    followed = attached((0, 0), {"counts": {str(OLD[0]): 0, str(OLD[1]): 0}, "followed": MASTER, "appeared": {}})
    said = text(latency_report(followed))
    assert "the table places 0 of the 100 connections served: the other 100 were accepted in no accept call of " \
        f"pid {MASTER}'s children, attached or not: accepted through io_uring" in said, said  # fmt: skip
    assert NO_FOLLOW not in said, said


def test_a_process_that_is_its_own_worker_is_not_said_to_have_children() -> None:
    own = attached((0,), {"counts": {"4242": 0}})
    server = ServerSpec(kind="attached", mode="attached", workers=1, port=18431, attach=(4242,), protocol="http")
    said = text(latency_report(replace(own, server=server)))
    assert "the other 100 were accepted in no accept call of pid 4242: accepted through io_uring" in said, said
    assert NO_FOLLOW not in said, said


def test_a_kernel_that_could_not_follow_is_still_said_so() -> None:
    """The master attached, its children counted without the master's (no BTF): the reload's reason, as before."""
    said = text(latency_report(attached((20, 30), {"counts": {str(OLD[0]): 20, str(OLD[1]): 30}})))
    assert f"were accepted by processes that were not attached (workers started during the run, as a reload " \
        f"does, are not traced: {NO_FOLLOW})" in said, said  # fmt: skip


@pytest.mark.parametrize("program", ["python3", "java", "myserver"])
def test_the_threads_of_a_program_this_tool_does_not_know_are_not_counted_as_servers(program: str) -> None:
    run = threaded_run(program)
    servers = model_servers(run)
    assert servers.count is None, servers
    assert predict(run) is None
    said = text(latency_report(run))
    assert f"Model: not judged: pid 4242 ({program}) serves with 2 threads" in said, said
    assert "threads are the servers counted" not in said, said
    assert predict(threaded_run("haproxy")) is not None  # a kind whose threads are its workers: as before


def test_a_repeat_stopped_mid_run_counts_its_failures_as_each_run_does(tmp_path: Path) -> None:
    """3. latency --repeat's table summed each run's `failed`, the connections a Ctrl-C found under way in the last
    run among them ('errors 16'), where that run's own report (5ebdf1e) says 'errors 0; 16 under way at the stop'.
    A real failure (a timeout) still counts, in a stopped run as in one that ran to its end."""
    doc = json.loads((GOLDEN / "repeat-latency.json").read_text())
    first, last = doc["rounds"][0][0], doc["rounds"][-1][0]
    first["errors"] = {"timeout": 2}
    last.update(errors={ABORTED: 16, "timeout": 1}, interrupted=True)
    saved = tmp_path / "stopped.json"
    saved.write_text(json.dumps(doc))
    result = run_cli(["show", str(saved)], columns=200)
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if line.lstrip().startswith(first["server"]["mode"]))
    assert row.split()[-1] == "3", row  # 2 + 1 timeouts; not 19


def test_without_btf_the_count_asks_for_no_parent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """4. A kernel without BTF cannot read a task's parent in bpftrace (the program would fail to load, and the
    whole count with it): the counter then follows no master and its program names only the pids asked about."""
    monkeypatch.setattr(accept_program, "BTF", str(tmp_path / "no-btf"))
    counter = AcceptCounter([101, 102], children_of=100)
    assert counter.children_of is None
    assert "real_parent" not in counter.program() and "pid == 101" in counter.program()
    monkeypatch.setattr(accept_program, "BTF", str(tmp_path))  # present: the master's children are let in
    followed = AcceptCounter([101, 102], children_of=100)
    assert followed.children_of == 100 and "curtask->real_parent->tgid == 100" in followed.program()
