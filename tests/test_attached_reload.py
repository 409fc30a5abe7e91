"""latency --attach $(cat nginx.pid) --protocol http across an `nginx -s reload`: the report said 'served 6438'
while the per-worker table summed to 5,592, and nothing said that the 846 others were accepted by the workers the
reload started (the trace followed the attached pids only); its stop line said '0 failed' beside '14 × aborted'.
Now the kernel's count follows the master's children and names those that appeared, a report without them says
how many it cannot place, and the connections a stop found under way are said as the stop's on both lines."""

from __future__ import annotations

import io
import os
from dataclasses import replace

from rich.console import Console, RenderableType
from test_accepts_probe import CONNECTIONS, accept_own, needs_bpftrace, workers
from test_cut_short_run_tails import TIGHT, run

from accept_order.core.histogram import LatencyHistogram
from accept_order.core.load_summary import LoadSummary
from accept_order.core.protocol import ABORTED
from accept_order.core.spec import ServerSpec
from accept_order.experiments.latency.report import latency_report
from accept_order.experiments.latency.result import LatencyResult
from accept_order.experiments.loading import Loading
from accept_order.probes.accepts import AcceptCounter

MASTER, OLD, NEW = 23805, (29221, 29222), (29593, 29594)


def text(renderable: RenderableType) -> str:
    console = Console(width=1000, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def attached(served: tuple[int, int], counts: dict[str, object], interrupted: bool = False) -> LatencyResult:
    """A run attached to nginx's master (one request per connection), its table the kernel's accepts."""
    r = run("attached", TIGHT)
    server = ServerSpec(kind="attached", mode="attached", workers=2, port=18431, attach=(MASTER,), protocol="http")
    evidence = {
        "accept_counts": {"available": True, "why": "bpftrace on tracepoint syscalls:sys_exit_accept4"} | counts
    }
    return replace(r, server=server, served=served, evidence=evidence, interrupted=interrupted)


@needs_bpftrace
def test_the_count_follows_the_masters_children_that_were_not_attached() -> None:
    """Three forked workers (children of this process), one attached: the other two's accepts come back apart,
    by pid; this process's own accepts (the 'master' is not its own child) are in neither."""
    with workers() as pool, AcceptCounter(pool.pids[:1], children_of=os.getpid()) as counter:
        counter.start()
        assert counter.attached, counter.stop().why
        pool.connect(CONNECTIONS)
        accept_own(5)
        result = counter.stop()
        own = pool.finish()
    assert result.available, result.why
    first = pool.pids[0]
    assert result.counts == {first: own[first]}
    assert result.appeared == {pid: n for pid, n in own.items() if pid != first and n}
    assert os.getpid() not in result.appeared
    assert result.evidence(os.getpid())["appeared"] == result.appeared


def test_a_report_names_the_workers_that_appeared_and_what_they_accepted() -> None:
    result = attached((0, 0), {"counts": {str(OLD[0]): 0, str(OLD[1]): 0}, "followed": MASTER,
                               "appeared": {str(NEW[0]): 166, str(NEW[1]): 234}})  # fmt: skip
    said = text(latency_report(result))
    assert f"children of pid {MASTER} that were not attached" in said, said
    assert f"accepted 400 connections the table leaves out (pid {NEW[0]} 166, pid {NEW[1]} 234)" in said, said


def test_a_report_that_could_not_follow_says_how_many_the_table_cannot_place() -> None:
    """No BTF here (or several pids attached): the count saw the attached pids only; the table's sum falls short
    of the connections served, each accepted once, and the report says by how many."""
    result = attached((20, 30), {"counts": {str(OLD[0]): 20, str(OLD[1]): 30}})
    said = text(latency_report(result))
    assert "the table places 50 of the 100 connections served: the other 50 were accepted by processes that " \
        "were not attached" in said, said  # fmt: skip
    whole = attached((50, 50), {"counts": {str(OLD[0]): 50, str(OLD[1]): 50}})
    assert "the table places" not in text(latency_report(whole))


def test_the_stop_line_and_the_report_both_say_the_connections_under_way_apart() -> None:
    """The stop line counted the drivers' progress ('384 served, 0 failed') while the report listed the 16 the
    stop found under way as failures ('16 of 400 connections failed: 16 × aborted', errors 16 in the table)."""
    hist = LatencyHistogram()
    for _ in range(384):
        hist.add(1000)
    loading = Loading()
    loading.summary = LoadSummary(
        histogram=hist, errors={ABORTED: 16, "timeout": 2}, served=(0, 0), drivers=(), wall_s=1.0
    )
    assert (
        loading.describe() == "the run stopped after 386 connections (384 served, 2 failed; 16 under way at the stop)"
    )
    result = replace(attached((192, 192), {"counts": {}}), errors={ABORTED: 16}, interrupted=True)
    said = text(latency_report(result))
    assert "failed" not in said.split("Kernel evidence")[-1].split("under way")[0], said
    assert "16 connections under way at the stop (aborted by it: neither failed nor served)" in said, said
    row = said.split("wall s")[1].splitlines()[2].split()
    assert row[-3:-1] == ["100", "0"], row  # served, errors: the stop's are not the server's failures
    # a run that ran to its end: an aborted connection is among its failures, as before
    whole = replace(result, interrupted=False)
    assert "16 of 116 connections failed" in text(latency_report(whole))
