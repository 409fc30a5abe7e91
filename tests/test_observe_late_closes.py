"""observe's closes read after its last look, while it settles, of connections no look saw were dropped
uncounted and unsaid (5ddda3f left them out of the window's counts, rightly: each may have closed after it). They
are counted apart (closes_late, with their bytes in) and said, whether the watch decoded them or only counted
them (more than one worker: a cookie no look knows is counted undecoded by the reader)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from test_observe_closes import Announced, Look, closed, sampler_over, sock
from test_rough_edges_observe_window import _request, hand_nginx  # noqa: F401 (a fixture)

from accept_order.api import observe
from accept_order.core.waiting import wait_for
from accept_order.experiments.observe import load as load_module
from accept_order.experiments.observe.closes import closes

TIMEOUT_S = 30.0
LOOKS: list[Look] = [
    ([sock(1, 11, 100), sock(2, 22, 100), sock(3, 33, 100)], {100: {11, 33}, 200: {22}}),  # the start
    ([sock(1, 11, 200), sock(2, 22, 300)], {100: {11}, 200: {22}}),  # the last look: 3 closed in the window
]


def test_decoded_closes_read_while_settling_are_counted_apart() -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        announced = [
            [],
            [],
            [closed(7, 50)],  # read when settling began: the window's, no look saw it
            [closed(1, 900), closed(8, 40), closed(3, 150)],  # 1: seen open by the last look; 8: no look saw it
        ]
        sampler = sampler_over(monkeypatch, LOOKS, announced)
    assert (sampler.closes_counted, sampler.closed_unlooked, sampler.closed_unlooked_bytes_in) == (1, 1, 50)
    assert (sampler.closes_late, sampler.closes_late_bytes_in) == (1, 40)  # 8; not 1, which closed after the window
    summary = sampler.summary()
    assert (summary["closes_late"], summary["closes_late_bytes_in"]) == (1, 40)


class CountedUndecoded(Announced):
    """A watch whose reader counts, undecoded, two closes of cookies no look knew while the sampler settles."""

    takes = 0

    def take(self) -> list[closed]:  # type: ignore[valid-type]
        CountedUndecoded.takes += 1
        if CountedUndecoded.takes == 4:  # the settle's first take; the reader counts two more just after it
            self.unseen, self.unseen_bytes_in = self.unseen + 2, self.unseen_bytes_in + 70
        return super().take()


def test_undecoded_closes_counted_while_settling_are_counted_apart() -> None:
    CountedUndecoded.takes = 0
    with pytest.MonkeyPatch.context() as monkeypatch:
        sampler = sampler_over(monkeypatch, LOOKS, [[], [], [], [closed(3, 150)]], watch=CountedUndecoded)
    assert (sampler.closed_unlooked, sampler.closes_counted) == (0, 1)
    assert (sampler.closes_late, sampler.closes_late_bytes_in) == (2, 70)


def test_closes_while_observe_settles_are_said(hand_nginx: object, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A hand-started nginx of two workers: two keep-alive connections held through the window; once its last
    look is taken they close, and three more open, ask and close. None is the window's: the three no look saw
    are counted apart and said; the two the last look saw open are not (they closed after the window)."""
    port = hand_nginx.port  # type: ignore[attr-defined]
    held = [socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) for _ in range(2)]
    for client in held:
        _request(client)
    samplers: list[load_module.LoadSampler] = []
    settle = load_module.LoadSampler.settle

    def settling(self: load_module.LoadSampler) -> None:
        samplers.append(self)
        settle(self)

    def late_closes(probe: Callable[[], bool], timeout_s: float, interval_s: float = 0.01) -> bool:
        watch = samplers[0].closes
        assert watch is not None
        read, unseen = watch.read, watch.unseen
        for client in held:
            client.close()
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as client:
                _request(client)

        def announced() -> bool:  # the watch is held (its reader stopped) while it settles: read here
            watch.drain()
            return watch.read >= read + 2 and watch.unseen >= unseen + 3

        assert wait_for(announced, TIMEOUT_S, interval_s=0.005)
        return wait_for(probe, timeout_s, interval_s=interval_s)

    monkeypatch.setattr(load_module.LoadSampler, "settle", settling)
    monkeypatch.setattr(load_module, "wait_for", late_closes)
    try:
        result = observe(port=port, duration_s=0.6, trace=False, interval_s=0.2)
    finally:
        for client in held:
            client.close()
    log = Path(hand_nginx.access_log).read_text().splitlines()  # type: ignore[attr-defined]
    assert len(log) == 5  # nginx served the two before the window and the three after it
    assert (result.closes_counted, result.closed_unlooked) == (0, 0), result
    assert result.closes_late == 3 and (result.closes_late_bytes_in or 0) >= 3 * 20, result
    said = closes(result, [w.bytes_in or 0 for w in result.workers])
    assert any(
        line.startswith("3 connections no look saw were announced closed only after the last look") for line in said
    ), said
