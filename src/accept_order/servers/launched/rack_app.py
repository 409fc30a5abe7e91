"""The Rack app the tool's Ruby servers (Puma, Unicorn) serve, written into the run's private directory.

Like gunicorn_app: it burns the run's work (additions, then a timed busy loop), then answers `worker PID`.
It also hands the server's request log the client's port: Rack's common log format (which both Puma's
`log_requests` and Rack::CommonLogger, Unicorn's, write) has no port, so the app puts `PID:PORT:N` in
REMOTE_USER, a field of that format nothing else here sets (N: the request's number on its connection, which
the socket object counts). The peer is asked of the connection the server accepted (`puma.socket`,
`unicorn.socket`), whose port the kernel knows.
"""

from __future__ import annotations

import os
import re

from ...core.spec import ServerSpec

CONFIG_RU = """# written by accept-order for one run; removed when it ends
require "socket"

WORK_US = {work_us}
WORK_ITERS = {work_iters}

app = lambda do |env|
  sum = 0
  WORK_ITERS.times {{ sum += 1 }}
  if WORK_US > 0
    stop = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) + WORK_US * 1000
    sum += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond) < stop
  end
  sock = env["puma.socket"] || env["unicorn.socket"]
  port = sock ? Socket.unpack_sockaddr_in(sock.getpeername)[0] : "-"
  # the connection's own count of its requests (the socket object lives as long as it does)
  n = sock ? (sock.instance_variable_get(:@accept_order_requests) || 0) + 1 : 1
  sock.instance_variable_set(:@accept_order_requests, n) if sock
  env["REMOTE_USER"] = "#{{Process.pid}}:#{{port}}:#{{n}}"
  body = "worker #{{Process.pid}}\\n"
  [200, {{"Content-Type" => "text/plain", "Content-Length" => body.bytesize.to_s}}, [body]]
end
run app
"""


def write_app(spec: ServerSpec, directory: str) -> str:
    """config.ru for one run in `directory`; its path."""
    path = os.path.join(directory, "config.ru")
    with open(path, "w") as f:
        f.write(CONFIG_RU.format(work_us=spec.work_us, work_iters=spec.work_iters))
    return path


def parse_common_log(fields: list[str]) -> tuple[int, ...] | None:
    """(worker pid, client port, the request's number on its connection) from a common-log line the app's
    REMOTE_USER marks (`ADDR - PID:PORT:N [...`; an older app's `PID:PORT` gives the first two), split on
    white space, with anything the server prefixes before it; None for any other line."""
    for i in range(len(fields) - 3):
        if fields[i + 1] == "-" and fields[i + 3].startswith("["):
            marks = fields[i + 2].split(":")
            if len(marks) in (2, 3) and all(m.isdigit() for m in marks):
                return tuple(map(int, marks))
    return None


def ruby_error(line: str) -> str:
    """A Ruby exception's line without its source location: `/usr/lib/.../binder.rb:341:in `initialize':
    Address already in use - bind(2) for "127.0.0.1" port 8080 (Errno::EADDRINUSE)` -> from `Address`."""
    match = re.match(r"\S+:\d+:in [`'][^']*': (.+)", line)
    return match[1] if match else line
