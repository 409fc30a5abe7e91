"""A load generator's driver that raises anything reports it through its pipe, and the run fails with one line naming
the driver and why: only OSError was, so any other exception printed the driver's traceback and the run said 'driver 1
(pid N) died with exit code 1 before reporting' (seen once under 'ramp --modes epoll,io-uring -w 2 --work 500us',
its cause not kept). The driver here is made to raise a ValueError before it connects (it runs forked, so the
monkeypatch is its own too)."""

from __future__ import annotations

import pytest

import accept_order
from accept_order.core.errors import LoadError
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.loads import drive_loop


def test_a_driver_that_raises_is_named_with_its_error(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object) -> None:
        raise ValueError("the binding refused this")

    monkeypatch.setattr(drive_loop, "_drive", broken)
    with pytest.raises(LoadError, match=r"driver \d failed: ValueError: the binding refused this"):
        accept_order.latency(
            ServerSpec(mode="blocking", workers=1), ConcurrentLoad(connections=10, concurrency=2, driver="epoll")
        )
    assert "Traceback" not in capfd.readouterr().err
