"""observe's reader of the kernel's close announcements keeps to a CPU budget (probes/tcp_destroy.py Budget,
SHARE): over it, it stops reading and the kernel's buffer holds what comes; what the kernel drops meanwhile
and what is still queued at the end are counted as skipped, apart from what is lost, so that the
announcements read, counted undecoded, skipped and lost add up to every close. An announcement whose cookie
no look knows is counted with its bytes, undecoded (DestroyWatch.known, set by load.py's looks).

The witness: a second watch on the same port, with no budget and no `known`, reads and decodes every
announcement (the kernel hands each one to every socket that joined the group, in one call: once the witness
has one, the watch under test has it queued or its drop counted)."""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Iterator
from dataclasses import replace

import pytest
from conftest import wait_for
from test_observe_closes import Announced, Look, announcement, closed, sock
from test_observe_load import result_with

from accept_order.experiments.observe import load as load_module
from accept_order.experiments.observe.load import LoadSampler
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.server import Unit, Watched
from accept_order.experiments.observe.verdict import verdict
from accept_order.probes import tcp_destroy
from accept_order.probes.tcp_destroy import Budget, DestroyWatch
from accept_order.probes.tcp_info import TcpSocket, server_sockets

TIMEOUT_S = 30.0


class Ticks:
    """A clock read by hand: each reading adds `step` (a made-up CPU cost per look at it)."""

    def __init__(self, step: float = 0.0) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_the_budget_is_a_share_of_the_wall_time_with_a_burst_in_hand() -> None:
    cpu, clock = Ticks(), Ticks()
    budget = Budget(0.01, 0.002, cpu=cpu, clock=clock)  # 1% of one CPU, 2 ms in hand
    cpu.now += 0.0015
    assert not budget.over() and budget.wait_s() == 0.0
    cpu.now += 0.001  # 2.5 ms used, none of it earned yet: 0.5 ms over
    assert budget.over() and budget.wait_s() == pytest.approx(0.05)  # 0.5 ms at 1% comes in 50 ms
    clock.now += 0.049
    assert budget.over()
    clock.now += 0.002
    assert not budget.over()
    clock.now += 3600.0  # an idle hour earns no more than the bucket holds
    cpu.now += 0.0021
    assert budget.over()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen(128)
        yield listening


def _connect(listening: socket.socket, payloads: list[bytes]) -> list[tuple[socket.socket, socket.socket]]:
    """Connections to `listening`, each sent its payload and the payload read by the server's side."""
    pairs = []
    for payload in payloads:
        client = socket.create_connection(listening.getsockname(), timeout=TIMEOUT_S)
        server, _ = listening.accept()
        client.sendall(payload)
        assert server.recv(len(payload), socket.MSG_WAITALL) == payload
        pairs.append((client, server))
    return pairs


def _close(pairs: list[tuple[socket.socket, socket.socket]]) -> None:
    for client, server in pairs:
        server.close()
        client.close()


def _announced(witness: DestroyWatch, count: int) -> list[TcpSocket]:
    """Every announcement up to `count`, decoded by the witness."""
    seen: list[TcpSocket] = []

    def more() -> int:
        witness.drain()
        seen.extend(witness.take())
        return len(seen)

    wait_for(more, lambda n: n >= count, TIMEOUT_S, f"{count} closes announced to the witness")
    assert len(seen) == count and witness.dropped == 0
    return seen


def test_a_burst_beyond_the_budget_pauses_reading_and_every_close_is_counted(
    listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A budget spent after two looks at the CPU (one message each): reading stops with two read and the rest
    queued; 30 more closes overflow the watch's small buffer while it is behind. Then it catches up: what was
    queued is read, each drop is skipped (none lost), and read + skipped is every close."""
    monkeypatch.setattr(tcp_destroy, "_CHECK_EVERY", 1)
    port = listener.getsockname()[1]
    witness = DestroyWatch([port])
    watch = DestroyWatch([port], rcvbuf=4096)  # room for a few messages: the kernel must drop while it is behind
    try:
        _close(_connect(listener, [b"a"] * 4))
        _announced(witness, 4)
        budget = Budget(1e-9, 0.0025, cpu=Ticks(0.001), clock=Ticks())  # 1 ms per look; 2.5 ms in hand
        assert watch.drain(budget) == 2 and watch.behind  # stopped at the third look, two left queued
        assert watch.drain(budget) == 0 and watch.behind  # still over: nothing read
        _close(_connect(listener, [b"b"] * 30))
        _announced(witness, 30)
        assert watch.dropped > 0  # the buffer overflowed while the reader held back
        queued = watch.drain(Budget(1.0, 1.0))  # back under: it reads to the end
        assert not watch.behind and queued > 0 and watch.skipped == watch.dropped and watch.lost == 0
    finally:
        watch.close()
        witness.close()
    assert watch.read == 2 + queued and watch.read + watch.unseen + watch.skipped + watch.lost == 34


def test_drops_while_the_reader_keeps_up_are_lost_not_skipped(listener: socket.socket) -> None:
    """The same small buffer, overflowed with no budget held back: those drops are lost; a budget with room
    reads the rest to the end (not behind), and nothing is skipped."""
    port = listener.getsockname()[1]
    witness = DestroyWatch([port])
    watch = DestroyWatch([port], rcvbuf=4096)
    try:
        _close(_connect(listener, [b"c"] * 30))
        _announced(witness, 30)
        assert watch.drain(Budget(1.0, 1.0)) > 0 and not watch.behind
    finally:
        watch.close()
        witness.close()
    assert watch.lost > 0 and watch.skipped == 0 and watch.read + watch.lost == 30


def test_the_reader_thread_pauses_over_its_budget_and_the_queue_is_counted_at_the_end(
    listener: socket.socket,
) -> None:
    """A reader with nothing in hand and a share too small to earn a message: it stops at once and waits; all
    the closes stay queued, and closing the watch counts them as skipped."""
    port = listener.getsockname()[1]
    witness = DestroyWatch([port])
    watch = DestroyWatch([port], share=1e-9, depth_s=0.0)
    try:
        watch.start()
        _close(_connect(listener, [b"d"] * 5))
        _announced(witness, 5)
        wait_for(lambda: watch.pauses, lambda n: n >= 1, TIMEOUT_S, "the reader stopped over its budget")
    finally:
        watch.close()
        witness.close()
    assert watch.read == watch.unseen == 0 and watch.skipped == 5 and watch.lost == 0 and watch.cpu_s > 0


def test_an_unknown_cookie_is_counted_with_its_bytes_undecoded(listener: socket.socket) -> None:
    """Four connections, two of them known (their cookies from an inet_diag dump, as a look has them): those
    two are decoded as the witness decodes them; the other two only counted, with the bytes the witness says
    they received."""
    port = listener.getsockname()[1]
    witness = DestroyWatch([port])
    watch = DestroyWatch([port])
    try:
        pairs = _connect(listener, [b"1" * 100, b"2" * 200, b"3" * 300, b"4" * 400])
        cookies = {s.bytes_received: s.cookie for s in server_sockets([port])}
        known = {cookies[100], cookies[300]}
        watch.known = known
        _close(pairs)
        every = _announced(witness, 4)
        wait_for(lambda: watch.drain() + watch.read + watch.unseen, lambda n: n >= 4, TIMEOUT_S, "4 closes")
        decoded = watch.take()
    finally:
        watch.close()
        witness.close()
    assert sorted(decoded) == sorted(s for s in every if s.cookie in known)
    assert watch.unseen == 2 and watch.unseen_bytes_in == sum(
        s.bytes_received or 0 for s in every if s.cookie not in known
    )
    assert watch.unseen_bytes_in in (600, 601, 602)  # 200 + 400, and a byte for each FIN that came first


def test_the_cheap_path_reads_the_cookie_and_bytes_where_the_full_decode_does() -> None:
    """_KEY reads the same fields at the same places as _ANNOUNCED, on a message made as the kernel makes it."""
    message = announcement(1 << 40 | 9, 8080, 12345, 678, 9, 10)
    length, mtype, sport, low, high, ptype, alen, atype, received = tcp_destroy._KEY.unpack_from(message)
    full = tcp_destroy._ANNOUNCED.unpack_from(message)
    assert (length, mtype, ptype, atype, alen) == (full[0], full[1], full[12], full[14], full[13])
    assert (sport, low | high << 32, received) == (full[7], 1 << 40 | 9, 12345)
    assert struct.unpack("!H", struct.pack("=H", sport))[0] == 8080


# -- load.py: the looks tell the watch what they know ---------------------------------------------------------


class Counting(Announced):
    """Announced, which also has counted some undecoded and skipped some, and keeps `known` at each take."""

    unseen, unseen_bytes_in, skipped = 3, 250, 7
    known_at_take: list[set[int] | None] = []

    def take(self) -> list[TcpSocket]:
        known = self.known
        Counting.known_at_take.append(None if known is None else set(known))  # type: ignore[call-overload]
        return super().take()


def _sampled(monkeypatch: pytest.MonkeyPatch, workers: tuple[int, ...]) -> tuple[LoadSampler, list[object]]:
    """A sampler over three looks (1 gone at the second, announced before the third) and what the watch
    knew during each dump."""
    looks: list[Look] = [
        ([sock(1, 11, 100), sock(2, 22, 100)], {100: {11}, 200: {22}}),
        ([sock(2, 22, 300)], {100: set(), 200: {22}}),
        ([sock(2, 22, 400)], {100: set(), 200: {22}}),
    ]
    step, current, during = iter(looks), [], []

    def dump(ports: object, netns_pid: object = None) -> list[TcpSocket]:
        assert sampler.closes is not None
        during.append(sampler.closes.known)
        current[:] = [next(step)]
        return current[0][0]

    monkeypatch.setattr(load_module, "server_sockets", dump)
    monkeypatch.setattr(load_module, "socket_inodes", lambda pid: current[0][1].get(pid, set()))
    monkeypatch.setattr(load_module, "DestroyWatch", Counting)
    monkeypatch.setattr(load_module, "SETTLE_S", 0.05)
    Announced.script, Counting.known_at_take = [[], [], [closed(1, 150)], []], []  # take() reads Announced's
    watched = Watched("port 8080", "x", None, workers, tuple(Unit(p) for p in workers), (8080,), (), 100)
    sampler = LoadSampler(watched)
    sampler.open_closes()
    for _ in looks:
        sampler.sample()
    sampler.settle()
    return sampler, during


def test_the_looks_set_the_known_cookies_and_the_undecoded_are_counted_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between two looks the watch knows the last look's cookies (a gone one too, until announced); during a
    look it knows none (every announcement decoded); what it counted undecoded is in closed_unlooked and what
    it skipped in closes_skipped."""
    two, during = _sampled(monkeypatch, (100, 200))
    assert during == [None, None, None]
    assert Counting.known_at_take == [None, {1, 2}, {1, 2}, {2}]  # at each look, then as it settles
    summary = two.summary()
    assert summary["closed_unlooked"] == 3 and summary["closed_unlooked_bytes_in"] == 250
    assert summary["closes_skipped"] == 7 and summary["closes_counted"] == 1 and summary["closes_lost"] == 0
    assert two.carried[100].bytes_in == 50  # 1's tail from its announcement: 100 to 150
    one, during = _sampled(monkeypatch, (100,))
    assert during == [None, None, None] and set(map(type, Counting.known_at_take)) == {type(None)}  # all its own
    assert one.carried[100].bytes_in == 50 and one.closes_counted == 1  # 1's tail, to the one worker


def test_the_verdict_says_how_many_were_skipped_for_the_budget_in_one_line() -> None:
    result = result_with([25, 25], [1, 1], [100, 700], closes_counted=30, closes_lost=0, closes_skipped=1234)
    said = [line for line in verdict(result) if "not read" in line]
    assert said == [
        "1,234 announcements of a close not read, to keep reading them within 0.25% of one CPU: those "
        "connections' bytes are counted only to their last look (not at all where no look saw one)"
    ]
    again = ObserveResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result and again.closes_skipped == 1234  # saved and read back
    older = result.to_dict()
    del older["closes_skipped"]  # a file from before the budget
    before = ObserveResult.from_dict(json.loads(json.dumps(older)))
    assert before.closes_skipped is None and not any("not read" in line for line in verdict(before))
    assert not any("not read" in line for line in verdict(replace(result, closes_skipped=0)))


def test_where_no_look_saw_a_connection_the_announcements_are_still_said() -> None:
    """One request per connection beyond the budget (found under wrk Connection: close: no look saw one, 6,693
    counted undecoded, 92,229 skipped): the verdict said 'none carried data' and nothing of either."""
    result = result_with(
        [50, 50], [0, 0], [0, 0], closes_counted=0, closes_lost=0, closes_skipped=92229, closed_unlooked=6693
    )
    result = replace(result, closed_unlooked_bytes_in=500_000)
    said = verdict(result)
    assert "load: no connection was open at a sample" in said
    assert any(
        line.startswith("6,693 connections opened and closed between two looks: the 500,000 bytes") for line in said
    )
    assert any(line.startswith("92,229 announcements of a close not read") for line in said)
    nothing = verdict(replace(result, closes_skipped=0, closed_unlooked=0, closed_unlooked_bytes_in=0))
    assert "load: no connection was open at a sample and none carried data while observed" in nothing
