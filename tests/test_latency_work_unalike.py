"""latency --modes / several --server: a verdict between runs whose workers burned unlike work for one --work says so.

'latency --server nginx,haproxy -w 4 --pool -c 32 --requests-per-connection 0 --work 1ms --duration 5s' here (2
CPUs, load 4) read 'haproxy threads had the tightest tail of these runs: ... p99 (65.92 vs 143.70 ms, 0.46x)', where
HAProxy's threads had used 0.59 ms of CPU a request (the kernel's count of its process, polled by hand: 3.3 s over
5,569 requests) and nginx's workers 1.05 ms (3.67 s over 3,495): HAProxy's loop was timed by os.clock(), its whole
process's CPU, which its threads spinning at once advance together (each thread's own since, where lua-posix is
there; a run on the process's clock says so in its evidence, and the note names it). The golden comparison
(blocking, reuseport) is given that --work and those CPU figures here, its first run as the built-in server and its
second as nginx; alike figures, no --work, a work burned whole beside a costlier server, or one server's modes say
nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli
from verdict_shown import GOLDEN, verdict_shown

from accept_order.core.work_clocks import PROCESS_CLOCK, THREAD_CLOCK


def verdict(
    tmp_path: Path, work_us: int, per_request_us: tuple[float, float], kinds: tuple[str, str], clock: str = ""
) -> str:
    """The golden comparison as servers of `kinds`, given --work `work_us`, their workers' CPU `per_request_us`;
    `clock`: the first run's evidence says its work was timed by that clock (HAProxy's work_clock)."""
    doc: dict[str, Any] = json.loads((GOLDEN / "latency-compare.json").read_text())
    if clock:  # as HAProxy's threads mode
        doc["runs"][0]["evidence"]["work_clock"] = clock
        doc["runs"][0]["server"]["mode"] = "threads"
    for run, us, kind in zip(doc["runs"], per_request_us, kinds, strict=True):
        run["server"]["work_us"] = work_us
        run["server"]["server"] = kind
        served = run["summary"]["count"]
        for counters in run["counters"]:  # the workers' CPU: `us` a request, shared between them
            counters["cpu_s"] = us * served / 1e6 / len(run["counters"])
    return verdict_shown(doc, tmp_path)


def test_runs_that_burned_unlike_work_are_said(tmp_path: Path) -> None:
    said = verdict(tmp_path, 1000, (590, 1050), ("builtin", "nginx"))
    assert (
        "They did not burn alike work: for --work 1 ms the workers used 0.59 ms of CPU a request during blocking "
        "against 1.05 ms during nginx reuseport (the kernel's count over the requests served; each server times its "
        "loop by its own clock): what parts them may be the work each did as much as the mode"
    ) in said, said


def test_haproxy_on_its_processs_clock_is_named(tmp_path: Path) -> None:
    """A HAProxy run whose threads spun on their process's CPU (lua-posix missing) is why the note was written."""
    said = verdict(tmp_path, 1000, (590, 1050), ("haproxy", "nginx"), clock=PROCESS_CLOCK)
    assert (
        "each server times its loop by its own clock; HAProxy's threads by their process's, lua-posix being missing)"
    ) in said, said
    assert "lua-posix" not in verdict(tmp_path, 1000, (590, 1050), ("haproxy", "nginx"), clock=THREAD_CLOCK)


def test_alike_work_or_none_says_nothing(tmp_path: Path) -> None:
    servers = ("builtin", "nginx")
    assert "alike work" not in verdict(tmp_path, 1000, (890, 1050), servers)  # within 3/4 of each other
    assert "alike work" not in verdict(tmp_path, 0, (590, 1050), servers)  # no --work: each server's own cost
    # the work burned whole, beside a server whose own cost adds to it (a herd's wakeups, a slower parser)
    assert "alike work" not in verdict(tmp_path, 1000, (1000, 1400), servers)


def test_one_servers_modes_say_nothing(tmp_path: Path) -> None:
    """One server's modes time the loop by one clock: a mode that burns more CPU a request does so itself."""
    assert "alike work" not in verdict(tmp_path, 1000, (590, 1050), ("builtin", "builtin"))


REPEATED = GOLDEN / "repeat-latency.json"


def test_repeat_says_it_too_from_the_medians(tmp_path: Path) -> None:
    """The verdict's own advice, --repeat, kept every round's unlike work and dropped the note: 'latency --server
    nginx,haproxy ... --work 1ms --duration 2s --repeat 2' read 'haproxy threads has the lowest p99 in 2/2 runs',
    its threads at 0.646 ms of CPU a request (the median) against nginx's 1.056 ms."""
    doc: dict[str, Any] = json.loads(REPEATED.read_text())
    for round_ in doc["rounds"]:
        for run, us, kind in zip(round_, (590, 1050), ("builtin", "nginx"), strict=True):
            run["server"] = {**run["server"], "work_us": 1000, "server": kind}
            served = run["summary"]["count"]
            for counters in run["counters"]:
                counters["cpu_s"] = us * served / 1e6 / len(run["counters"])
    path = tmp_path / "repeat.json"
    path.write_text(json.dumps(doc))
    out = " ".join(run_cli(["show", str(path)]).stdout.split())
    assert (
        "They did not burn alike work: for --work 1 ms the workers used 0.59 ms of CPU a request during blocking "
        "against 1.05 ms during nginx reuseport (the kernel's count over the requests served, medians over the runs; "
        "each server times its loop by its own clock)"
    ) in out, out
    assert "alike work" not in run_cli(["show", str(REPEATED)]).stdout  # the golden's own: one server, no work
