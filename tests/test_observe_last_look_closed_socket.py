"""A review of 5ddda3f (observe's window ends at its last look): a socket the last look saw already closed by
its server (no fd table holds it, FIN_WAIT or LAST_ACK: the kernel keeps it until the handshake ends) was closed
in the window; its announcement, which comes after the look, is the window's. The settle left it out with the
sockets the last look saw open, and with it the connection and what it carried since the look before."""

from __future__ import annotations

import pytest
from test_observe_closes import Look, closed, sampler_over, sock

from accept_order.probes.tcp_info import TcpSocket

FIN_WAIT2, LAST_ACK = 5, 9  # linux/tcp_states.h


def closing(cookie: int, received: int, state: int) -> TcpSocket:
    """A socket its server has closed (inode 0), still in the kernel's tables."""
    return TcpSocket(cookie, 0, state, 8080, received, 2 * received, received // 10, received // 10, 3)


@pytest.mark.parametrize("state", [FIN_WAIT2, LAST_ACK])
def test_a_socket_the_last_look_saw_closed_by_its_server_is_the_windows(
    monkeypatch: pytest.MonkeyPatch, state: int
) -> None:
    looks: list[Look] = [
        ([sock(1, 11, 100)], {100: {11}, 200: set()}),  # the start
        ([sock(1, 11, 200), sock(4, 44, 50)], {100: {11}, 200: {44}}),  # 4 opened, held by 200
        ([sock(1, 11, 300), closing(4, 180, state)], {100: {11}, 200: set()}),  # the last: 200 closed 4
    ]
    announced = [[], [], [], [closed(1, 900), closed(4, 180)]]  # as it settles: 1 closed after the window
    sampler = sampler_over(monkeypatch, looks, announced)
    assert sampler.closes_counted == 1 and sampler.closed_unlooked == 0
    assert sampler.carried[200].bytes_in == 180  # 50 at its look, 130 more to its close
    assert sampler.carried[100].bytes_in == 200  # 1: up to the last look only


def test_a_socket_the_last_look_saw_open_is_still_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    looks: list[Look] = [
        ([sock(1, 11, 100)], {100: {11}, 200: set()}),
        ([sock(1, 11, 300), sock(4, 0, 50)], {100: {11}, 200: set()}),  # 4 waits in the listen queue
    ]
    sampler = sampler_over(monkeypatch, looks, [[], [], [closed(1, 900), closed(4, 60)]])
    assert (sampler.closes_counted, sampler.closed_unlooked, sampler.carried[100].bytes_in) == (0, 0, 200)
