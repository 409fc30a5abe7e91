"""An open loop waits for its next due time, not for its tick, whenever the next request could start then.

loads/kept.py's loop waited for its due time only with an idle connection to send on: where the next request needs
a new connection (the load's first, a driver's first after its offset among the load's drivers since d59e4b0, the
first after a connection's K requests), it slept a whole tick (100 ms) and the request started that late, its
latency counted from when it was due (80-99 ms maxima at 50/s over 1 to 4 drivers, medians 1 ms; 1.4-2.2 ms
since). Here the tick is longer than the whole load: a loop that waits it out (or to the deadline) before a request
it could start carries none of the load.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from accept_order.core.finished import PUBLISHED
from accept_order.core.protocol import KEEP_LINE
from accept_order.core.spec import ServerSpec
from accept_order.loads.drive_loop import DriverConfig
from accept_order.loads.kept import drive_kept
from accept_order.servers.pool import WorkerPool

TICK_S = 30.0  # the loop's tick: far beyond the load's DURATION_S
DURATION_S = 0.5
HANG_S = 20.0  # a loop that waits out its tick is still running after this


class Never:
    value = 0


def test_a_request_that_needs_a_new_connection_starts_when_due_not_a_tick_later() -> None:
    # 40/s for 0.5 s from 25 ms in, two requests per connection: every other request opens a new connection
    attribution = SimpleNamespace(from_reply=lambda _: 0, holds_socket=False)
    with WorkerPool(ServerSpec(mode="epoll", workers=2, keepalive=True)) as pool:
        cfg = DriverConfig(
            0, pool.address, attribution, KEEP_LINE, None, DURATION_S, 2, 5.0, 40.0, per_connection=2, offset_s=0.025
        )
        out: dict[str, Any] = {}
        thread = threading.Thread(
            target=lambda: out.update(drive_kept(cfg, [0] * PUBLISHED, Never(), Never(), lambda: None, TICK_S)),
            daemon=True,
        )
        thread.start()
        thread.join(HANG_S)
        assert not thread.is_alive(), f"the loop waited out its {TICK_S} s tick"
    # the requests due after the first connection's two went over new connections, opened when due
    assert sum(out["served"].values()) > 2 and out["errors"] == {}, (out["served"], out["errors"])
    assert sum(out["connections"].values()) > 1
