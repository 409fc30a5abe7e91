"""The WSGI app the tool's gunicorn serves: it burns the run's work, then answers with its worker's pid.

Read by gunicorn's workers only (`accept_order.servers.launched.gunicorn_app:app`); the work settings come from the
environment the tool starts gunicorn with.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from ...probes.work import spin

WORK_US = int(os.environ.get("ACCEPT_ORDER_WORK_US", "0") or 0)
WORK_ITERS = int(os.environ.get("ACCEPT_ORDER_WORK_ITERS", "0") or 0)


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    spin(WORK_US, WORK_ITERS)
    body = f"worker {os.getpid()}\n".encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
