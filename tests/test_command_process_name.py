"""The command's process, and the workers it forks, are named accept-order, as they were when the command was one
Python script: the kernel names a process after the file it executes (cut to 15 bytes), and the Python part that
scripts/accept-order starts is accept-order-python ('accept-order-py'), a name ps and pgrep would show and that
inspect and observe did not recognise as this tool's own workers ('accept-order-py is not a server this tool
knows'). The command is installed here as pip does (the launcher as it is, the Python part's #! line naming this
interpreter) and run through the launcher.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
from pathlib import Path

from accept_order.servers.registry import recognise

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
TIMEOUT_S = 60.0  # a start-up on a busy machine; never reached when the test passes
WORKER = re.compile(r"^\s*worker \d+ pid (\d+)$")


def _install(bin_dir: Path) -> Path:
    launcher = bin_dir / "accept-order"
    launcher.write_bytes((SCRIPTS / "accept-order").read_bytes())
    part = (SCRIPTS / "accept-order-python").read_text().splitlines(keepends=True)
    (bin_dir / "accept-order-python").write_text(f"#!{sys.executable}\n" + "".join(part[1:]))
    for script in (launcher, bin_dir / "accept-order-python"):
        script.chmod(0o755)
    return launcher


def _lines_until_ready(proc: subprocess.Popen[bytes]) -> list[str]:
    """serve's lines up to its 'try:' line (printed once every worker is up), read without sleeping."""
    assert proc.stdout is not None
    fd, data = proc.stdout.fileno(), b""
    while b"\ntry:" not in data:
        readable, _, _ = select.select([fd], [], [], TIMEOUT_S)
        assert readable, f"serve never said it was ready: {data!r}"
        chunk = os.read(fd, 4096)
        assert chunk, f"serve ended first: {data!r}"
        data += chunk
    return data.decode().splitlines()


def _comm(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().rstrip("\n")


def test_the_command_and_its_workers_are_named_accept_order(tmp_path: Path) -> None:
    command = _install(tmp_path)
    proc = subprocess.Popen(
        [str(command), "serve", "--mode", "epoll", "-w", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        lines = _lines_until_ready(proc)
        workers = [int(m[1]) for line in lines if (m := WORKER.match(line))]
        assert len(workers) == 2, lines
        names = {pid: _comm(pid) for pid in (proc.pid, *workers)}
        assert set(names.values()) == {"accept-order"}, names
        argv = Path(f"/proc/{workers[0]}/cmdline").read_bytes().decode().split("\0")
        kind = recognise(names[workers[0]], argv)
        assert kind is not None and kind.name == "builtin"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=TIMEOUT_S)
        assert (proc.returncode, err) == (0, b"")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
