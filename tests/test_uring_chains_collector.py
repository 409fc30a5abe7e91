"""The io_uring chains' loop (loads/uring_chains.py) runs with the cycle collector off, since it makes no reference
cycles and the collector would only walk each batch's young objects, and leaves the collector as it found it."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from test_uring_chains import CHAINS
from test_uring_loop import LINE, TICK_S, AnyReply, Flag, Server, bounded, replying

from accept_order.loads.drive_loop import DriverConfig
from accept_order.loads.uring_chains import drive_chains


class Watched(list[int]):
    """A driver's progress that notes, at each write (the loop publishes after every batch), whether the collector
    was on."""

    def __init__(self) -> None:
        super().__init__([0, 0])
        self.collecting: set[bool] = set()

    def __setitem__(self, index: Any, value: Any) -> None:
        self.collecting.add(gc.isenabled())
        super().__setitem__(index, value)


@CHAINS
@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_off_in_the_loop_and_as_it_was_after(enabled: bool) -> None:
    was = gc.isenabled()
    progress = Watched()
    with Server(replying(b"worker 0 pid 1\n")) as server:
        cfg = DriverConfig(0, server.address, AnyReply(), LINE, 20, None, 4, 5.0, loop="io_uring")
        (gc.enable if enabled else gc.disable)()
        try:
            result = bounded(lambda: drive_chains(cfg, progress, Flag(), TICK_S) or {}, in_thread=False)
            after = gc.isenabled()
        finally:
            (gc.enable if was else gc.disable)()
    assert sum(result["served"].values()) == 20
    assert progress.collecting == {False}
    assert after is enabled
