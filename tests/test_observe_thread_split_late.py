"""observe's thread split says from which look each thread was placed. A thread is placed (its epoll known) once it
is seen waiting in it; under a load that keeps HAProxy's threads running, some are first seen waiting only when the
load is over (by hand: HAProxy 2.6, 4 threads, wrk -c40: threads 1 and 3 running at every look for 5 s, then idle),
and the verdict read '10, 0, 10, 0 at most; 20 distinct in all' where each thread served 10: the idle end taken
for the whole window, and the 20 in no known epoll then not said (only the last look's, 0, was).

What the threads wait on and what their epolls watch are given here as /proc gave them by hand (a running thread's
syscall line says 'running': no epoll), so that which thread is running at which look is certain."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from accept_order.experiments.observe import thread_split
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.thread_split import ThreadSplit, serving_line
from accept_order.experiments.observe.verdict import verdict

KEPT = Path(__file__).parent / "data" / "observe_haproxy_threads_kept.json"  # HAProxy 2.6's, 4 threads
LISTENER = 1
EPOLLS = {0: 3, 1: 8, 2: 12, 3: 17}  # thread index -> its epoll descriptor (HAProxy 2.6's, by hand)
# each thread's connections (their inodes) while the load runs: 10 each, as its replies would name them
SERVED = {index: frozenset(range(100 * (index + 1), 100 * (index + 1) + 10)) for index in EPOLLS}


def looked(monkeypatch: pytest.MonkeyPatch, runs: list[set[int]], open_at: list[frozenset[int]]) -> ThreadSplit:
    """A split of a 4-thread HAProxy after one look per item of `runs` (the threads running at it, so not waiting)
    and `open_at` (the connections open then)."""
    saved = ObserveResult.from_dict(json.loads(KEPT.read_text()))
    tids = [w.tid for w in saved.workers]
    watched = SimpleNamespace(
        workers=(saved.workers[0].tid,),
        units=tuple(SimpleNamespace(tid=tid) for tid in tids),
        ports=saved.ports,
        netns_pid=saved.workers[0].tid,
        inodes=frozenset({LISTENER}),
    )
    look = [0]
    monkeypatch.setattr(thread_split, "same_namespace", lambda pid: True)
    monkeypatch.setattr(thread_split, "gone", lambda pid: False)
    monkeypatch.setattr(thread_split, "epoll_count", lambda pid: len(EPOLLS))  # one of its own each
    monkeypatch.setattr(
        thread_split,
        "epolls_waited",
        lambda pid, asked: {tid: EPOLLS[i] for i, tid in enumerate(tids) if i not in runs[look[0]]},
    )
    by_fd = {fd: index for index, fd in EPOLLS.items()}
    monkeypatch.setattr(
        thread_split, "watched_inodes", lambda pid, fd: (SERVED[by_fd[fd]] | {LISTENER}) & open_at[look[0]] | {LISTENER}
    )
    monkeypatch.setattr(
        thread_split,
        "server_sockets",
        lambda ports, netns: [SimpleNamespace(inode=inode) for inode in sorted(open_at[look[0]] | {LISTENER})],
    )
    split = ThreadSplit(watched)  # type: ignore[arg-type]
    for look[0] in range(len(runs)):
        split.look(last=True)
    return split


def result_of(split: ThreadSplit) -> ObserveResult:
    saved = ObserveResult.from_dict(json.loads(KEPT.read_text()))
    workers = tuple(dataclasses.replace(w, **split.of(w.tid)) for w in saved.workers)
    return dataclasses.replace(
        saved, workers=workers, serving_looks=split.looks, serving_unplaced=split.unplaced, serving_why=split.why
    )


def test_threads_first_placed_after_the_load_are_said_placed_late(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = frozenset().union(*SERVED.values())
    # threads 1 and 3 run at each look under the load; at the last, the load over, all four wait
    split = looked(monkeypatch, [{1, 3}, {1, 3}, {1, 3}, set()], [loaded, loaded, loaded, frozenset()])
    result = result_of(split)
    assert [w.serving_held for w in result.workers] == [0, 0, 0, 0]  # the last look: known for all four
    assert [w.serving_from for w in result.workers] == [1, 4, 1, 4]
    assert [w.serving_peak for w in result.workers] == [10, 0, 10, 0]  # of the looks each was placed at
    assert result.serving_unplaced == 20  # 1's and 3's, at each look under the load
    line = serving_line(result)
    assert line is not None
    assert "10, 0, 10, 0 at most; 20 distinct at the looks each was placed" in line, line
    assert "up to 20 open at one look in no thread's known epoll" in line, line
    assert "thread 1, 3 from look 4 of 4 only" in line, line


def test_threads_placed_at_every_look_are_said_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = frozenset().union(*SERVED.values())
    split = looked(monkeypatch, [set(), {1, 3}, set()], [loaded, loaded, frozenset()])  # 1, 3 known from the first
    result = result_of(split)
    assert [w.serving_peak for w in result.workers] == [10, 10, 10, 10]
    assert [w.serving_seen for w in result.workers] == [10, 10, 10, 10]
    assert [w.serving_from for w in result.workers] == [1, 1, 1, 1]
    assert result.serving_unplaced == 0
    line = serving_line(result)
    assert line is not None and line.endswith("10, 10, 10, 10 at most; 40 distinct in all"), line


def test_a_thread_running_at_the_first_look_of_a_steady_load_is_counted_from_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An idle thread caught running at the first look (a timer's wakeup, a wait for a CPU: 4 of 17,144 reads of an
    idle HAProxy's threads here) is placed at the next, and its connections, kept all along, are counted in full."""
    loaded = frozenset().union(*SERVED.values())
    split = looked(monkeypatch, [{2}, set(), set()], [loaded, loaded, loaded])
    result = result_of(split)
    assert [w.serving_peak for w in result.workers] == [10, 10, 10, 10]
    assert [w.serving_from for w in result.workers] == [1, 1, 2, 1]
    line = serving_line(result)
    assert line is not None and "thread 2 from look 2 of 3 only" in line, line


def test_every_thread_running_until_the_last_look_still_says_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A load that keeps all four running until the last look: that look's split is said (not left out, with the
    hand-off line saying the load is per process)."""
    loaded = frozenset().union(*SERVED.values())
    split = looked(monkeypatch, [{0, 1, 2, 3}, {0, 1, 2, 3}, set()], [loaded, loaded, loaded])
    result = result_of(split)
    assert [w.serving_held for w in result.workers] == [10, 10, 10, 10]
    line = serving_line(result)
    assert line is not None, verdict(result)
    assert "10, 10, 10, 10 at the last look, 10, 10, 10, 10 at most; 40 distinct at the looks each was placed" in line
    assert "up to 40 open at one look" in line and "thread 0, 1, 2, 3 from look 3 of 3 only" in line, line
    assert not any("which thread serves it is not counted here" in said for said in verdict(result)), verdict(result)


def test_a_thread_never_placed_leaves_no_total_said_of_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads 0 and 3 running at every look (by hand, wrk -c40: '-, 10, 10, - ...; 20 distinct in all' of 40)."""
    loaded = frozenset().union(*SERVED.values())
    split = looked(monkeypatch, [{0, 3}, {0, 3}], [loaded, loaded])
    line = serving_line(result_of(split))
    assert line is not None and "-, 10, 10, - at most; 20 distinct at the looks each was placed" in line, line
    assert "up to 20 open at one look" in line and "thread 0, 3 never seen waiting in its epoll" in line, line
