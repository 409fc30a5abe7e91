"""A worker of one thread is read as serving one connection at a time only where the connections its server held open
at once say so (review of e775dfce): PyPI's gunicorn 27 with -k uvicorn.workers.UvicornWorker (uvloop's event loop in
each worker's one thread; 3 workers, an app awaiting 2 ms, latency --attach -n 2000 -c 12) came back empty from 8
accepts of 2,000, under the 167 that taking all that wait makes, and read as 'gunicorn's workers, one thread each,
serve one connection at a time' was modelled one connection a wakeup. It held 9 to 11 connections open at once at the
median of the run's reads that found any, its sync workers 2 to 3; beside three CPU hogs (load 8-11) 8-10 and 3 in
the upper quartile, which decides."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from gunicorn_by_hand import gunicorn_by_hand
from test_attached_one_per_wakeup import counted
from test_model_accept_gaps import _sleeping

from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_one_at_a_time import held_at_once
from accept_order.experiments.latency.model_queues import one_per_wakeup, queues_text
from accept_order.probes.busy_waits import HELD_BUSY_EVERY_S, HELD_EVERY_S, BusySampler
from accept_order.probes.held_connections import HeldConnections, held_now
from accept_order.probes.netlink_diag import open_diag_socket

START_TIMEOUT_S = 30.0


def holding(held: dict[str, Any], program: str = "gunicorn") -> Any:
    """counted()'s 4 one-thread workers of `program`, 3 of 1,000 accepts empty at 16 clients, whose reads found
    `held`."""
    result = counted({"4243": 2, "4244": 1}, program=program)
    looks = {**result.evidence["busy_waits"], "held": held}
    return replace(result, evidence={**result.evidence, "busy_waits": looks})


def test_a_worker_of_one_thread_holding_many_at_once_is_an_event_loop() -> None:
    """gunicorn's one-thread workers read 12 connections open at once in the upper quartile (an event loop a worker,
    4 of them): a few empty accepts stay 'all'; at 3 (at most twice the workers, the reads' overcount) one a wakeup."""
    loop = holding({"0": 20, "11": 2, "12": 5, "14": 1})
    assert one_per_wakeup(loop) is None
    model = predict(loop)
    assert model is not None and (model.discipline, model.batch) == ("holder", 0), model
    said = queues_text(replace(loop, model=model))
    held = "but a quarter of the run's reads that found connections open found 12 or more at once, over twice its 4 "
    assert said is not None and held in said and "workers: event loops, each serving all it" in said, said
    sync = holding({"0": 20, "2": 4, "3": 3, "6": 1, "9": 1})
    assert one_per_wakeup(sync) == 1000
    said = queues_text(replace(sync, model=predict(sync)))
    quartile = (
        "at a time; three quarters of the run's reads that found connections open found 3 or fewer at once, and 3"
    )
    assert said is not None and quartile in said, said
    assert one_per_wakeup(holding({"0": 20, "12": 5}, program="unicorn")) is None  # 'one' kinds are read too


@pytest.mark.parametrize(
    "held",
    [
        {"0": 40, "12": 4},  # too few reads found any held: the kind decides
        {},
        {"x": 9, "12": "many", "-3": 7},  # a hand-edited file's: not read
        "12",
    ],
)
def test_too_few_reads_leave_it_to_the_kind(held: Any) -> None:
    assert held_at_once({"busy_waits": {"held": held}}) is None
    assert one_per_wakeup(holding(held)) == 1000


def test_the_upper_quartile_is_of_the_reads_that_found_any() -> None:
    """UvicornWorker's reads beside three CPU hogs spread from 1 to 15, its median 6, its upper quartile 8 (over twice
    its 3 workers); its sync workers' 1 to 6, upper quartile 3."""
    assert held_at_once({"busy_waits": {"held": {"0": 100, "1": 2, "3": 2, "9": 1}}}) == 3
    assert held_at_once({"busy_waits": {"held": {"1": 3, "10": 3}}}) == 10
    loaded = {"0": 56, "1": 4, "2": 4, "3": 2, "4": 2, "5": 3, "6": 4, "7": 2, "8": 3, "9": 2, "12": 2, "14": 1}
    assert held_at_once({"busy_waits": {"held": loaded}}) == 8
    assert held_at_once({"busy_waits": {"held": {"0": 77, "1": 21, "2": 12, "3": 11, "6": 1}}}) == 3


def test_an_event_loops_accept_gaps_are_not_its_service() -> None:
    """The model of gunicorn's one-thread workers draws from the kernel's accept gaps (test_model_accept_gaps);
    found holding 12 connections at once (4 workers), it does not."""
    plain = _sleeping({"114": 800, "200": 200})
    drawn = predict(plain)
    assert drawn is not None and drawn.service_gaps == 1000, drawn
    looks = {**plain.evidence["busy_waits"], "held": {"0": 10, "12": 6}}
    loop = predict(replace(plain, evidence={**plain.evidence, "busy_waits": looks}))
    assert loop is not None and loop.service_gaps is None and loop.batch == 1, loop  # none empty: one a wakeup


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, int, int]]:
    """A listener on a port the kernel picks: (it, its port, its socket's inode)."""
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        yield srv, srv.getsockname()[1], os.fstat(srv.fileno()).st_ino


def test_held_counts_accepted_connections_not_closed(listener: tuple[socket.socket, int, int]) -> None:
    """3 clients connected, 2 accepted: 2 held (the third waits in the accept queue, fileless); one closed: 1. A dump
    that does not see the listener named says nothing."""
    srv, port, inode = listener
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    taken = [srv.accept()[0] for _ in range(2)]
    try:
        with open_diag_socket() as sock:
            assert held_now(sock, port, frozenset({inode}), 1) == 2
            taken[0].close()
            assert held_now(sock, port, frozenset({inode}), 2) == 1
            assert held_now(sock, port, frozenset({inode + 1}), 3) is None
    finally:
        for s in clients + taken:
            s.close()


@pytest.mark.parametrize(
    ("accepted", "read"),
    [
        (0, {"0": 2}),  # none held: a read every HELD_EVERY_S (at 0 and 0.1 s)
        (1, {"1": 3}),  # one held: every HELD_BUSY_EVERY_S after a read that found it (at 0, 0.05 and 0.1 s)
    ],
)
def test_the_looks_count_the_held_sooner_while_some_are(
    listener: tuple[socket.socket, int, int], accepted: int, read: dict[str, int]
) -> None:
    """Looks at 0, 0.02, 0.05 and 0.1 s: the held connections are read at the first, and then 0.1 s after a read that
    found none, 0.04 s after one that found any."""
    srv, port, inode = listener
    client = socket.create_connection(("127.0.0.1", port))
    conns = [srv.accept()[0] for _ in range(accepted)]
    worker = subprocess.Popen(["sleep", "60"])  # a process of one thread for the looks to look at
    try:
        now = [0.0]
        sampler = BusySampler(
            [worker.pid],
            read=lambda _path: b"running",
            clock=lambda: now[0],
            held=HeldConnections(port, frozenset({inode})),
        )
        sampler.start(thread=False)
        assert (HELD_BUSY_EVERY_S, HELD_EVERY_S) == (0.04, 0.1)
        for at in (0.0, 0.02, 0.05, 0.1):
            now[0] = at
            assert sampler.look()
        looked = sampler.stop()
        assert looked is not None and looked["held"] == read, looked
    finally:
        worker.kill()
        worker.wait()
        client.close()
        for conn in conns:
            conn.close()


ASGI_APP = """
import asyncio


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await asyncio.sleep(0.002)
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"3")]})
    await send({"type": "http.response.body", "body": b"ok\\n"})
"""
REQUESTS, CLIENTS, WORKERS = 2000, 12, 3


def test_an_attached_gunicorn_of_event_loop_workers_is_not_one_a_wakeup(tmp_path: Path) -> None:
    """PyPI's gunicorn, 3 UvicornWorker workers (uvloop, one thread each), 2,000 connections 12 at once: a few of the
    kernel's accepts come back empty, fewer than the 167 that taking all makes, but the reads find it holding more
    than twice its workers at once, so the model stays 'all' and says nothing of one at a time. Its access log holds
    every connection the kernel counted."""
    pytest.importorskip("uvicorn.workers")
    if os.geteuid() != 0 or shutil.which("bpftrace") is None:
        pytest.skip("counting accepts in the kernel needs root and bpftrace")
    out = tmp_path / "latency.json"
    floor = REQUESTS // CLIENTS
    for _ in range(3):  # none empty (one a wakeup by the kernel alone) asks another question: again
        with gunicorn_by_hand(ASGI_APP, tmp_path, WORKERS, START_TIMEOUT_S, "-k", "uvicorn.workers.UvicornWorker") as g:
            args = ["latency", "--attach", str(g.master), "--port", str(g.port), "--protocol", "http"]
            result = run_cli([*args, "-n", str(REQUESTS), "-c", str(CLIENTS), "--json", str(out)], columns=400)
            assert result.exit_code == 0, result.output
            logged = len(g.access_log.read_text().splitlines())
            g.access_log.unlink()
        doc = json.loads(out.read_text())
        kernel = doc["evidence"]["accept_counts"]
        if not kernel["available"]:
            pytest.skip(f"the kernel's accept counts were not available: {kernel['why']}")
        assert sum(kernel["counts"].values()) == logged == REQUESTS, (kernel["counts"], logged)
        empty = sum(kernel["empty"].values())
        if empty:
            break
    assert 0 < empty < floor, kernel["empty"]
    held = held_at_once(doc["evidence"])
    assert held is not None and held > 2 * WORKERS, doc["evidence"]["busy_waits"].get("held")
    model = doc["model"]
    assert (model["discipline"], model["batch"]) == ("shared", 0), (kernel["empty"], model)
    assert "one connection at a time" not in result.output, result.output


def test_a_dump_of_another_family_does_not_see_the_listener() -> None:
    """An IPv6 listener's connections are its family's (v4-mapped ones too): the IPv4 dump alone, as a read of an IPv4
    listener makes, does not see it and says nothing; the IPv6 one counts its accepted connection."""
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    with socket.socket(socket.AF_INET6) as srv:
        try:
            srv.bind(("::1", 0))
        except OSError as exc:
            pytest.skip(f"no IPv6 loopback here: {exc}")
        srv.listen(8)
        port, inode = srv.getsockname()[1], os.fstat(srv.fileno()).st_ino
        with socket.create_connection(("::1", port)), srv.accept()[0], open_diag_socket() as sock:
            assert held_now(sock, port, frozenset({inode}), 1, (socket.AF_INET,)) is None
            assert held_now(sock, port, frozenset({inode}), 2, (socket.AF_INET6,)) == 1
