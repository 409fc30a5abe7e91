"""The accept counter's map of threads between an accept that took a connection and their next accept call (@took,
probes/accept_program.py) holds live threads only: a thread's entry goes as it exits. Kept, every worker that took a
connection and exited (a master forking one per connection, or recycling its workers: gunicorn's max_requests)
stayed in it, and once bpftrace's map was full (4,096 keys; further keys dropped without a word) no gap was timed:
the model then lost its per-connection service times for the rest of the run, saying nothing. The map is made small
here (BPFTRACE_MAP_KEYS_MAX, as bpftrace reads it) so that a few dozen dead workers fill it: a master forks 80
children that each take one connection and exit, then one that takes three and calls accept again, whose three gaps
the kernel times."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import OutputReader, wait_for

from accept_order.probes.accepts import AcceptCounter
from accept_order.probes.proc_waits import syscall_names

IO_TIMEOUT_S = 10.0  # any single wait here; a hang fails instead of blocking the suite
MAP_KEYS = 64  # bpftrace's map size for this test: the dead workers below outnumber it
DEAD = 80  # children that take one connection each and exit
KEPT = 3  # connections the last child takes before it calls accept again

MASTER = f"""
import os, socket, sys
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(256)
print(listener.getsockname()[1], flush=True)
sys.stdin.readline()  # the counter is attached
for _ in range({DEAD}):
    pid = os.fork()
    if pid == 0:
        connection, _ = listener.accept()
        connection.close()
        os._exit(0)
    os.waitpid(pid, 0)
pid = os.fork()
if pid == 0:
    for _ in range({KEPT}):
        connection, _ = listener.accept()
        connection.close()
    listener.accept()  # closes the last gap; held here until the test ends
    os._exit(0)
print(pid, flush=True)
os.waitpid(pid, 0)
"""


def _served(port: int) -> None:
    """One connection to the master's listener, read until its child closes it (it took it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S) as client:
        assert client.recv(1) == b""


def _in_call(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/syscall").read_text().split()[0]
    except (OSError, IndexError):
        return "gone"


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")
def test_dead_workers_leave_no_entry_that_stops_the_gaps(monkeypatch: pytest.MonkeyPatch) -> None:
    accept4 = {name: number for number, name in syscall_names().items()}.get("accept4")
    if accept4 is None:
        pytest.skip("this machine's system call table is not known to probes/proc_waits.py")
    monkeypatch.setenv("BPFTRACE_MAP_KEYS_MAX", str(MAP_KEYS))
    master = subprocess.Popen(
        [sys.executable, "-c", MASTER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert master.stdout is not None and master.stdin is not None
        said = OutputReader(master.stdout)
        port = int(said.wait_for(r"^(\d+)\n", IO_TIMEOUT_S).group(1))
        with AcceptCounter([master.pid], children_of=master.pid) as counter:
            counter.start()
            if counter.attach_s is None:
                pytest.skip(f"bpftrace did not attach: {counter.stop().why}")
            master.stdin.write("go\n")
            master.stdin.flush()
            for _ in range(DEAD + KEPT):
                _served(port)
            kept = int(said.wait_for(r"^\d+\n(\d+)\n", IO_TIMEOUT_S).group(1))
            wait_for(lambda: _in_call(kept), lambda call: call == str(accept4), IO_TIMEOUT_S, "its fourth accept call")
            counts = counter.stop()
    finally:
        os.killpg(master.pid, signal.SIGKILL)
        master.wait(IO_TIMEOUT_S)
    assert counts.available, counts.why
    assert counts.gaps is not None and sum(counts.gaps.values()) == KEPT, counts.gaps
