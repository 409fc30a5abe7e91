"""What changes how a uvicorn pool splits: 'uvicorn --workers 4' under wrk -c20 (20 kept connections) held them
0/5/0/15 (observe's count; ss -tnp read during the load: 5 and 15), 6/2/5/7 in another run, and inspect and observe
offered only --timeout-keep-alive, which a busy pool never reaches: uvicorn has no socket per worker. gunicorn's
does: 4 UvicornWorkers under gunicorn 27 with --reuse-port held the same pool 4/8/5/3 over 4 SO_REUSEPORT listeners
(ss -ltn). The row says so, unmeasured (the tool runs uvicorn's own --workers)."""

from __future__ import annotations

from accept_order.experiments.inspect.cures import long_lived_cures
from accept_order.servers.registry import server_kind


def test_uvicorn_is_told_of_a_socket_per_worker_under_gunicorn() -> None:
    rows = {cure.setting: cure for cure in long_lived_cures(server_kind("uvicorn"), ("asyncio", "uvloop"))}
    row = rows["gunicorn -k uvicorn_worker.UvicornWorker --reuse-port"]
    assert "SO_REUSEPORT" in row.what and "hash" in row.what
    assert "--timeout-keep-alive 5" in rows  # the idle limit stays, first
