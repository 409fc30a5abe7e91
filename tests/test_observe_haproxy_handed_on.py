"""observe of HAProxy's threads says accepted, not took: a thread's accepts are not the connections it serves.

HAProxy 2.6 (nbthread 4, one `bind` shared by its threads) under `wrk -t1 -c8` read 'worker 3 (thread 15685) took
89% of 9 connections; an even share is 25%; workers 0 and 1 took none', the words of a worker holding most of
the connections; a note at the end said the thread that accepts 'is not always the one that serves'. bpftrace on
the same server and load (accept4 returns by thread; recvfrom by thread and fd) saw one thread accept all 8 and
each of the 4 threads read from 2 of them: HAProxy hands each accepted connection to the less loaded of two
threads (tune.listener.multi-queue). The file is that observe's own (tests/data/observe_haproxy_threads_kept.json);
the same file as another threaded server's (h2o's loops serve what they accept) keeps 'took'."""

from __future__ import annotations

import json
from pathlib import Path

from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import verdict

DATA = Path(__file__).parent / "data" / "observe_haproxy_threads_kept.json"


def said(**changed: object) -> list[str]:
    return verdict(ObserveResult.from_dict({**json.loads(DATA.read_text()), **changed}))


def test_haproxys_threads_accepted_and_the_verdict_says_who_serves_is_not_counted() -> None:
    lines = said()
    assert lines[0] == (
        "worker 3 (thread 15685) accepted 89% of 9 connections; an even share is 25%; workers 0 and 1 accepted none"
    )
    assert lines[1].startswith("these are the threads' accepts, not necessarily the connections each serves"), lines


def test_the_hand_off_is_said_as_haproxys_default_not_as_seen() -> None:
    """HAProxy 2.6 with 'tune.listener.multi-queue off' (nbthread 4, wrk -c8): the thread that accepted 8 of 9
    connections read from those 8 (bpftrace by hand: recvfrom by thread and fd), where the line said the accepting
    thread 'hands each one to the less loaded of two threads'. The config says which; /proc does not."""
    line = said()[1]
    assert "unless its config turns tune.listener.multi-queue off" in line, line
    assert "the accepting thread hands each one" not in line, line


def test_a_threaded_server_whose_threads_serve_what_they_accept_took_them() -> None:
    lines = said(program="h2o", recognised="h2o")
    assert lines[0].startswith("worker 3 (thread 15685) took 89% of 9 connections"), lines
    assert not any("not the connections each serves" in line for line in lines), lines


def test_haproxy_with_a_listener_per_thread_serves_what_each_thread_accepts() -> None:
    """`bind ... thread T` per thread (the shards cure): each thread accepts from its own socket and serves it."""
    lines = said(listeners=4)
    assert " took 89%" in lines[0] and "accepts, not the connections" not in lines[1], lines
