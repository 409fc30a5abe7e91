"""An h2o config for the tests that start Debian's h2o by hand: `threads` event loops on 127.0.0.1:`port`, serving
the files of `www`, its error log (and, asked for, its pid file and an access log of connection ids) in `folder`.

`user: root`: h2o started by root serves as nobody, who may not read pytest's tmp_path (0700): 403 for every file."""

from __future__ import annotations

from pathlib import Path


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
