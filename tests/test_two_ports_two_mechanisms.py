"""A server that listens on two ports in two ways: HAProxy (nbthread 4) with `bind :18082 shards by-thread` beside
a plain `bind :18083`. inspect named it reuseport ('the kernel picks the thread by a hash') and nothing else, and
observe of it, driven by wrk on the plain bind only, said of its 8,349 empty accepts 'each worker has a queue of
its own, so none takes another's connection', where every thread waited on that one listener without
EPOLLEXCLUSIVE (a herd; bpftrace counted the same accepts, 37/11/29/24%). Each port is now classified alone, and
one whose mechanism differs is named ('Another port: ... as epoll-herd'); observe keeps both reasons for an
empty accept there."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import OutputReader, wait_for
from observe_result_made import result

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener, Seen
from accept_order.analysis.other_listeners import served_otherwise
from accept_order.experiments.inspect.run import inspect
from accept_order.experiments.observe.result import ObservedMechanism
from accept_order.experiments.observe.verdict import verdict

TIMEOUT_S = 20.0
GROUP = (Listener(41, "127.0.0.1", 8080), Listener(42, "127.0.0.1", 8080))
PLAIN = Listener(43, "127.0.0.1", 8081)


def thread(tid: int, own: int, exclusive: bool = False) -> Seen:
    """A thread asleep in its own epoll, which watches its socket of the group and the plain listener."""
    return Seen(pid=100, tid=tid, call="epoll_wait", via="epoll", listeners=frozenset({own, 43}),
                exclusive=exclusive, epoll_id=f"e{tid}", holds=frozenset({41, 42, 43}))  # fmt: skip


def test_a_plain_listener_beside_a_group_is_named_with_its_own_mechanism() -> None:
    seen, listeners = [thread(101, 41), thread(102, 42)], [*GROUP, PLAIN]
    named = classify(seen, listeners, {100: 1}, {}).mechanism
    assert named == "reuseport"
    said = served_otherwise(seen, listeners, {100: 1}, {}, named)
    assert len(said) == 1, said
    assert said[0].startswith("127.0.0.1:8081 is served otherwise, as epoll-herd: 2 workers wait in epoll_wait()"), said
    # with EPOLLEXCLUSIVE on the plain listener it is epoll, still not the group's hash
    exclusive = [thread(101, 41, True), thread(102, 42, True)]
    assert served_otherwise(exclusive, listeners, {100: 1}, {}, named)[0].startswith(
        "127.0.0.1:8081 is served otherwise, as epoll:"
    )


def test_each_port_is_read_with_its_own_epoll_flag() -> None:
    """nginx: its own socket of the group watched without EPOLLEXCLUSIVE, the shared one with it."""
    seen = [dataclasses.replace(thread(t, own), exclusive_on=frozenset({43})) for t, own in ((101, 41), (102, 42))]
    said = served_otherwise(seen, [*GROUP, PLAIN], {100: 1}, {}, "reuseport")
    assert said and said[0].startswith("127.0.0.1:8081 is served otherwise, as epoll: 2 workers wait"), said


def test_a_lock_on_the_other_port_is_named() -> None:
    """nginx with accept_mutex on, 'listen 18097 reuseport' and 'listen 18098': each worker's epoll watches its own
    socket of the group, and only the lock's holder's the shared one; it read 'epoll: 1 worker waits ... (with one
    waiter there is no one else to wake)'."""
    group = (*GROUP, Listener(44, "127.0.0.1", 8080))
    held = frozenset({41, 42, 43, 44})

    def worker(pid: int, watched: set[int]) -> Seen:
        return Seen(pid=pid, tid=pid, call="epoll_wait", via="epoll", listeners=frozenset(watched), exclusive=False,
                    epoll_id=f"e{pid}", holds=held)  # fmt: skip

    seen = [worker(101, {41}), worker(102, {42}), worker(103, {44, 43})]
    parent = {101: 1, 102: 1, 103: 1}
    assert classify(seen, [*group, PLAIN], parent, {}).mechanism == "reuseport"
    said = served_otherwise(seen, [*group, PLAIN], parent, {}, "reuseport")
    assert said and said[0].startswith("127.0.0.1:8081 is served otherwise, as accept-mutex: only 1 of 3 workers"), said


def test_one_port_or_the_same_mechanism_on_each_says_nothing() -> None:
    seen = [thread(101, 41), thread(102, 42)]
    alone = [dataclasses.replace(s, listeners=s.listeners - {43}) for s in seen]
    assert served_otherwise(alone, list(GROUP), {100: 1}, {}, "reuseport") == ()
    other = (Listener(51, "127.0.0.1", 8443), Listener(52, "127.0.0.1", 8443))
    both = [
        dataclasses.replace(s, listeners=frozenset({own, mine}))
        for s, own, mine in zip(seen, (41, 42), (51, 52), strict=True)
    ]
    assert served_otherwise(both, [*GROUP, *other], {100: 1}, {}, "reuseport") == ()
    assert served_otherwise(seen, [*GROUP, PLAIN], {100: 1}, {}, None) == ()


def test_observe_keeps_both_reasons_for_an_empty_accept_where_another_port_is_shared() -> None:
    mixed = ObservedMechanism("reuseport", "the kernel hashes the 4-tuple", ("shards",), elsewhere=("8081 herds",))
    made = result([300, 200], mechanism=mixed)
    made = dataclasses.replace(made, workers=tuple(dataclasses.replace(w, empty=100) for w in made.workers))
    lines = verdict(made)
    empty = next(line for line in lines if "came back empty" in line)
    assert "woken for a connection another took" in empty and "a queue of its own" not in empty, empty
    assert "another port: 8081 herds" in lines, lines


# Two threads, each in its own epoll watching its own socket of a SO_REUSEPORT group and one plain listener on
# another port (HAProxy's shards beside a plain bind)
TWO_PORTS = """
import select, socket, sys, threading
def reuse():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("127.0.0.1", port))
    s.listen(8)
    return s
first = socket.socket()
first.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
first.bind(("127.0.0.1", 0))
first.listen(8)
port = first.getsockname()[1]
group = [first, reuse()]
plain = socket.create_server(("127.0.0.1", 0))
epolls = []
for own in group:
    e = select.epoll()
    e.register(own.fileno(), select.EPOLLIN)
    e.register(plain.fileno(), select.EPOLLIN | (select.EPOLLEXCLUSIVE if sys.argv[1] == "exclusive" else 0))
    epolls.append(e)
    threading.Thread(target=lambda e=e: [e.poll() for _ in iter(int, 1)], daemon=True).start()
print("ready", port, plain.getsockname()[1], *(e.fileno() for e in epolls), flush=True)
sys.stdin.read()
"""


@pytest.fixture(params=["herd", "exclusive"])
def two_ports(request: pytest.FixtureRequest) -> Iterator[tuple[int, int, int, str]]:
    """(the process's pid, its group's port, its plain listener's port, how its epolls watch the plain one: with
    EPOLLEXCLUSIVE or not), both threads asleep in epoll_wait."""
    argv = [sys.executable, "-c", TWO_PORTS, request.param]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        assert proc.stdout is not None
        found = OutputReader(proc.stdout).wait_for(r"ready (\d+) (\d+) (\d+) (\d+)\n", TIMEOUT_S)
        group, plain, *epolls = map(int, found.groups())
        wanted = {hex(fd) for fd in epolls}
        wait_for(lambda: _epoll_fds(proc.pid), lambda fds: wanted <= fds, TIMEOUT_S, "both threads in epoll_wait")
        yield proc.pid, group, plain, request.param
    finally:
        proc.kill()
        proc.wait(10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def _epoll_fds(pid: int) -> set[str]:
    """The epoll fds the process's threads sleep in epoll_wait on now (their syscall files: x86_64's number)."""
    found = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/syscall") as f:
                call = f.read().split()
        except OSError:
            continue
        if call[:1] == ["232"]:
            found.add(call[1])
    return found


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="epoll_wait's number is known for x86_64")
def test_inspect_names_the_plain_port_beside_the_group(two_ports: tuple[int, int, int, str]) -> None:
    """HAProxy's plain bind is watched without EPOLLEXCLUSIVE (a herd); nginx's `listen 8080` beside `listen 80
    reuseport` with it, its own socket of the group without (fdinfo: events 10000019 and 2019): the thread's one
    flag read nginx's as a herd too."""
    pid, group, plain, how = two_ports
    seen = inspect(pid=pid).mechanism
    assert seen.name == "reuseport", seen
    assert len(seen.elsewhere) == 1, seen.elsewhere
    named = "epoll: 2 workers wait" if how == "exclusive" else "epoll-herd: 2 workers wait"
    assert seen.elsewhere[0].startswith(f"127.0.0.1:{plain} is served otherwise, as {named}"), seen.elsewhere
    assert f":{group}" in seen.evidence[0], seen.evidence
