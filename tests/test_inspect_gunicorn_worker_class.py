"""inspect of gunicorn with gthread workers (PyPI's gunicorn 27, '-k gthread --threads 4 -w 4', started by hand: each
worker's epoll watches the shared listener without EPOLLEXCLUSIVE, epoll-herd, none of the modes this tool launches
gunicorn in) listed 'select: reuse_port = False' as the settings of the select row, a setting that server had
already: what takes it to select is the sync worker, which the tool launches each mode with. Each mode's settings
name it now, so the row says it; a server in one of the modes (sync workers) is told only what differs, as before."""

from __future__ import annotations

from accept_order.experiments.inspect.changes import change_views
from accept_order.servers.registry import server_kind

SYNC = 'worker_class = "sync"'


def _rows(seen: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {row.mode: row.settings for row in change_views(server_kind("gunicorn"), seen)}


def test_a_server_of_another_worker_class_is_told_the_sync_worker() -> None:
    rows = _rows(())  # gthread's epoll-herd: no mode of gunicorn looks like it
    assert rows["select"] == (SYNC, "reuse_port = False")
    assert rows["reuseport"] == (SYNC, "reuse_port = True")


def test_a_server_in_one_of_the_modes_is_told_only_what_differs() -> None:
    assert _rows(("select",)) == {"reuseport": ("reuse_port = True",)}
    assert _rows(("reuseport",)) == {"select": ("reuse_port = False",)}
