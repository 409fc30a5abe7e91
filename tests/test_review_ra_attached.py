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

from dataclasses import replace

import pytest
from test_attached_reload import MASTER, OLD, attached, text
from test_attached_threads_model import attached as threaded_run

from accept_order.core.spec import ServerSpec
from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_servers import model_servers
from accept_order.experiments.latency.report import latency_report

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
