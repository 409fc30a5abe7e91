"""observe's thread split says the most each thread held, and the distinct it watched, only of a thread placed at
every look. A thread is placed (its epoll known) once it is seen waiting in it; under a load that keeps HAProxy's
threads running, some are first seen waiting only when the load is over (by hand: HAProxy 2.6, 4 threads,
wrk -c40: threads 1 and 3 running at every look for 5 s, then idle), and the verdict read '10, 0, 10, 0 at most;
20 distinct in all' where each thread served 10: the idle end taken for the whole window.

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


def test_threads_first_placed_after_the_load_are_not_said_to_have_served_none(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = frozenset().union(*SERVED.values())
    # threads 1 and 3 run at each look under the load; at the last, the load over, all four wait
    split = looked(monkeypatch, [{1, 3}, {1, 3}, {1, 3}, set()], [loaded, loaded, loaded, frozenset()])
    result = result_of(split)
    assert [w.serving_held for w in result.workers] == [0, 0, 0, 0]  # the last look: known for all four
    assert [w.serving_peak for w in result.workers] == [10, None, 10, None]  # not '0 at most' of 1 and 3
    assert [w.serving_seen for w in result.workers] == [10, None, 10, None]
    assert result.serving_unplaced == 20  # 1's and 3's, at each look under the load
    line = serving_line(result)
    assert line is not None
    assert "0, 0, 0, 0 at the last look, 10, -, 10, - at most; 20 distinct in those said" in line, line
    assert "up to 20 open at one look in no thread's known epoll" in line, line
    assert "thread 1, 3 not seen waiting in its epoll at every look" in line, line


def test_threads_placed_at_every_look_are_said_in_full(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded = frozenset().union(*SERVED.values())
    split = looked(monkeypatch, [set(), {1, 3}, set()], [loaded, loaded, frozenset()])  # 1, 3 known from the first
    result = result_of(split)
    assert [w.serving_peak for w in result.workers] == [10, 10, 10, 10]
    assert [w.serving_seen for w in result.workers] == [10, 10, 10, 10]
    assert result.serving_unplaced == 0
    line = serving_line(result)
    assert line is not None and line.endswith("10, 10, 10, 10 at most; 40 distinct in all"), line


def test_every_thread_running_at_the_first_look_still_says_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    """A load begun before the first look that keeps all four running: the split of the last look is all that is
    known, and is said (with none 'at most'), not left out (the hand-off line then says the load is per process)."""
    loaded = frozenset().union(*SERVED.values())
    split = looked(monkeypatch, [{0, 1, 2, 3}, {0, 1, 2, 3}, set()], [loaded, loaded, loaded])
    result = result_of(split)
    assert [w.serving_held for w in result.workers] == [10, 10, 10, 10]
    assert [w.serving_peak for w in result.workers] == [None] * 4
    line = serving_line(result)
    assert line is not None, verdict(result)
    assert "10, 10, 10, 10 at the last look, -, -, -, - at most; up to 40 open" in line, line  # no distinct of none
    assert "up to 40 open at one look" in line and "thread 0, 1, 2, 3 not seen waiting" in line, line
    assert not any("which thread serves it is not counted here" in said for said in verdict(result)), verdict(result)
