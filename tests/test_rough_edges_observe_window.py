"""observe counts the closes of its window, not those it reads after it: at the end it waits (settle) for the
announcements of the sockets gone from its last look, and it counted every other announcement read meanwhile
too, a connection the last look saw open and closed after it (with the bytes it carried after the window) and
connections no look saw that opened and closed after it. Scripted on the sampler, then on a hand-started nginx
whose only closes come while observe settles."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from nginx_by_hand import nginx_by_hand
from test_observe_closes import NGINX_CONF, TIMEOUT_S, Look, closed, sampler_over, sock

from accept_order.api import observe
from accept_order.core.waiting import wait_for
from accept_order.experiments.observe import load as load_module


def test_a_close_after_the_last_look_is_not_the_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    looks: list[Look] = [
        ([sock(1, 11, 100), sock(2, 22, 100), sock(3, 33, 100)], {100: {11, 33}, 200: {22}}),  # the start
        ([sock(1, 11, 200), sock(2, 22, 300)], {100: {11}, 200: {22}}),  # the last look: 3 closed in the window
    ]
    announced = [
        [],
        [],
        [closed(7, 50)],  # read by the time it settles: opened and closed in the window, no look saw it
        [closed(1, 900), closed(8, 40), closed(3, 150)],  # while it waits for 3's: 1 and 8 closed after the window
    ]
    sampler = sampler_over(monkeypatch, looks, announced)
    assert (sampler.closes_counted, sampler.closed_unlooked, sampler.closed_unlooked_bytes_in) == (1, 1, 50)
    assert sampler.carried[100].bytes_in == 100 + 50  # 1 up to the last look (100 -> 200), 3 to its close
    assert sampler.carried[200].bytes_in == 200


@pytest.fixture
def hand_nginx(free_port: int) -> Any:
    with nginx_by_hand(NGINX_CONF, free_port, 2, TIMEOUT_S, "accept-order-test-window-") as nginx:
        yield nginx


def _request(client: socket.socket) -> None:
    client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    reply = b""
    while not reply.endswith(b"ok\n"):
        chunk = client.recv(4096)
        assert chunk, reply
        reply += chunk


def test_closes_while_observe_settles_are_left_out_against_the_kernels_announcements(
    hand_nginx: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two keep-alive connections held through the window, idle; once the window has ended (its last look
    taken, settling) they close, and three more open, ask and close. The kernel announces all five (the
    watch reads them before settling goes on): none is the window's."""
    port = hand_nginx.port
    held = [socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) for _ in range(2)]
    for client in held:
        _request(client)
    samplers: list[load_module.LoadSampler] = []
    settle = load_module.LoadSampler.settle

    def settling(self: load_module.LoadSampler) -> None:
        samplers.append(self)
        settle(self)

    def late_closes(probe: Callable[[], bool], timeout_s: float, interval_s: float = 0.01) -> bool:
        closes = samplers[0].closes
        assert closes is not None
        read, unseen = closes.read, closes.unseen
        for client in held:
            client.close()
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as client:
                _request(client)

        def announced() -> bool:  # the watch is held (its reader stopped) while it settles: read here
            closes.drain()
            return closes.read >= read + 2 and closes.unseen >= unseen + 3

        assert wait_for(announced, TIMEOUT_S, interval_s=0.005)
        return wait_for(probe, timeout_s, interval_s=interval_s)

    monkeypatch.setattr(load_module.LoadSampler, "settle", settling)
    monkeypatch.setattr(load_module, "wait_for", late_closes)
    try:
        result = observe(port=port, duration_s=0.6, trace=False, interval_s=0.2)
    finally:
        for client in held:
            client.close()
    assert samplers and result.load_samples >= 2, result
    log = Path(hand_nginx.access_log).read_text().splitlines()
    assert len(log) == 5  # nginx served the two before the window and the three after it
    assert (result.closes_counted, result.closed_unlooked, result.closed_busy) == (0, 0, 0), result
    assert sum(w.bytes_in or 0 for w in result.workers) == 0, result  # nothing moved in the window
