"""The WSGI app the tool's uWSGI serves: gunicorn_app's (the run's work, then `worker PID`), plus the client
port handed to uWSGI's request log.

uWSGI's own HTTP parser (--http-socket) puts no REMOTE_PORT in the environ, so the app asks the kernel for
the peer of the connection uWSGI accepted (uwsgi.connection_fd()) and gives it to the log as the request
variable `client_port`; the worker writes the log line (`accept-order-request %(pid) %(client_port)`)
after the reply.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable
from typing import Any

from .gunicorn_app import app as serve


def client_port(fd: int) -> int:
    """The peer port of the connection on `fd` (a duplicate is asked and closed: uWSGI keeps its own)."""
    with socket.socket(fileno=os.dup(fd)) as sock:
        return int(sock.getpeername()[1])


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    import uwsgi  # only inside uWSGI's workers

    uwsgi.set_logvar("client_port", str(client_port(uwsgi.connection_fd())))
    return serve(environ, start_response)
