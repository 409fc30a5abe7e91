"""observe's heading said "python3" where inspect said "uvicorn" for the same server: observe named the workers'
command (a uvicorn worker is `python3 -c from multiprocessing.spawn ...`), inspect the kind it recognised from
the topmost process's name and command line (`python3 .../uvicorn app:app`). observe now recognises it the
same way, and names it by that in its heading, its live line, its cure table and its file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import child_processes, gone, run_cli, wait_for

from accept_order.experiments.observe.result import ObserveResult
from accept_order.probes.listeners import listening_sockets

# A supervisor named like uvicorn's script that binds the port and starts two workers under other command lines,
# as uvicorn --workers 2 does (spawned python3 processes handed the listening socket).
SUPERVISOR = """
import socket, subprocess, sys
s = socket.create_server(("127.0.0.1", int(sys.argv[1])), backlog=64)
worker = "import socket, sys\\ns = socket.socket(fileno=int(sys.argv[1]))\\nwhile True:\\n    s.accept()[0].close()"
kids = [subprocess.Popen([sys.executable, "-c", worker, str(s.fileno())], pass_fds=[s.fileno()]) for _ in range(2)]
for k in kids:
    k.wait()
"""


def test_observe_names_uvicorn_as_inspect_does(tmp_path: Path, free_port: int) -> None:
    script = tmp_path / "uvicorn"
    script.write_text(SUPERVISOR)
    port = free_port
    supervisor = subprocess.Popen([sys.executable, str(script), str(port)], start_new_session=True)
    try:
        kids = wait_for(lambda: child_processes(supervisor.pid), lambda k: len(k) == 2, 20, "the two workers")
        pids = [supervisor.pid, *(k.pid for k in kids)]
        # netlink asked for this port alone: psutil.net_connections read the whole TCP table (tens of thousands of
        # TIME_WAITs beside the suite) and every process's descriptors, every 10 ms
        wait_for(lambda: listening_sockets(port), bool, 20, "the listener")
        inspected = run_cli(["inspect", "--port", str(port)], columns=300)
        assert inspected.stdout.splitlines()[0].startswith(f"accept-order inspect port {port}: uvicorn,")
        out = tmp_path / "observe.json"
        result = run_cli(
            ["observe", "--port", str(port), "--duration", "0.5s", "--no-trace", "--json", str(out)], columns=300
        )
        assert result.exit_code == 0, result.output
        assert f"accept-order observe: uvicorn, master {supervisor.pid}, port {port}, 2 workers" in result.stdout
        assert "python3" not in result.stdout.splitlines()[0]
        saved = json.loads(out.read_text())
        assert (saved["recognised"], saved["program"]) == ("uvicorn", "python3")  # the workers' comm, still kept
        assert ObserveResult.from_dict(saved).name == "uvicorn"
    finally:
        os.killpg(supervisor.pid, signal.SIGKILL)
        supervisor.wait()
    assert wait_for(lambda: gone(pids), bool, 5, "the supervisor and its workers to be gone")


def test_a_file_from_before_is_named_by_its_program(tmp_path: Path) -> None:
    """A file saved before observe recognised the server (no `recognised`) keeps the command name."""
    from accept_order.experiments.observe.report import _who

    result = ObserveResult(
        target="port 1", program="python3", master=None, ports=(1,), listeners=1, backlog=None, workers=(),
        intervals=(), duration_s=1.0, wall_s=1.0, traced=False, source="", queue_every_s=0.1, queue_samples=0,
        queue_max=None, queue_mean=None, counters={}, namespace="this tool's",
    )  # fmt: skip
    assert "recognised" not in result.to_dict()  # saved as before the field
    assert _who(result).startswith("python3, port 1")
