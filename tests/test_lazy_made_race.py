"""servers/lazy.Made makes a kind or mode on first use, and two threads may ask at once (observe asks inspect in a
thread beside its own reads, and both look kinds up): each must get the one object the registry keeps, the one a
test patches and a run's plan holds (bdf7740). Two threads are let into the making together, so both make one; no
timing decides it."""

from __future__ import annotations

import threading

from accept_order.servers.lazy import Made

WAIT_S = 30.0  # a thread that never arrives fails the test (BrokenBarrierError), never hangs it


def test_two_threads_that_both_made_one_hand_out_the_same() -> None:
    both_inside = threading.Barrier(2, timeout=WAIT_S)
    made: list[object] = []

    def make() -> object:
        both_inside.wait()  # neither has kept its object yet: each makes its own
        made.append(thing := object())
        return thing

    registry: Made[object] = Made(__name__, {"kind": make})
    handed: list[object] = []
    failed: list[BaseException] = []

    def ask() -> None:
        try:
            handed.append(registry["kind"])
        except BaseException as exc:  # noqa: BLE001 - the main thread says it
            failed.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert not failed, failed
    assert len(made) == 2  # both made one: the race the registry must settle
    assert handed[0] is handed[1] is registry["kind"]
    assert registry["kind"] in made
