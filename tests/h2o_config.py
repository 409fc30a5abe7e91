"""An h2o config for the tests that start Debian's h2o by hand: `threads` event loops on 127.0.0.1:`port`, serving
the files of `www`, its error log (and, asked for, its pid file and an access log of connection ids) in `folder`.
`started_h2o`: h2o itself on such a config, serving "ok\n" with an access log, once each of its loops waits.

`user: root`: h2o started by root serves as nobody, who may not read pytest's tmp_path (0700): 403 for every file."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from conftest import wait_for

from accept_order.probes.proc_waits import thread_wait


def h2o_config(
    folder: Path, port: int, threads: int, *, www: Path | None = None, pid_file: bool = False, access_log: bool = False
) -> str:
    lines = [f"num-threads: {threads}", "user: root"]
    if pid_file:
        lines.append(f"pid-file: {folder}/h2o.pid")
    lines += [
        f"error-log: {folder}/error.log",
        "listen:",
        "  host: 127.0.0.1",
        f"  port: {port}",
        "hosts:",
        "  default:",
        "    paths:",
        "      /:",
        f"        file.dir: {www if www is not None else folder / 'www'}",
    ]
    if access_log:
        lines += ["    access-log:", f"      path: {folder}/access.log", '      format: "%{connection-id}x"']
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def started_h2o(folder: Path, port: int, loops: int, timeout_s: float) -> Iterator[subprocess.Popen[bytes]]:
    """Debian's h2o with `loops` event loops on `port`, serving "ok\\n" at / and logging each request's connection id
    in `folder`/access.log, once each loop waits in epoll_wait (within `timeout_s`); stopped after."""
    binary = shutil.which("h2o")
    assert binary is not None
    (folder / "www").mkdir()
    (folder / "www" / "index.html").write_text("ok\n")
    config = folder / "h2o.conf"
    config.write_text(h2o_config(folder, port, loops, access_log=True))
    server = subprocess.Popen([binary, "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:

        def loops_waiting() -> tuple[int | None, int]:
            waits = [thread_wait(server.pid, int(tid)).call for tid in os.listdir(f"/proc/{server.pid}/task")]
            return server.poll(), waits.count("epoll_wait")

        wait_for(loops_waiting, lambda s: s[0] is not None or s[1] == loops, timeout_s, "h2o's loops in epoll_wait")
        assert server.poll() is None
        yield server
    finally:
        server.terminate()
        server.wait(10)
