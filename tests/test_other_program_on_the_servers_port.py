"""Another program listening on the server's port at another address is no part of the server: with a python3
on 127.0.0.2:18341 (backlog 1, never accepting, 2 waiting) beside nginx's 127.0.0.1:18341, `inspect NGINX_PID` read
'accept-order inspect pid 20674: python3, master pid 20674, 4 workers' with the python's listener in its table, and
`observe NGINX_PID` took its queue for nginx's: 'no connection was accepted in 5.0 s, though the listen queue held
up to 2 ...: connections waited and none was taken' of an idle nginx (ss: its own Recv-Q 0, d0), and 'the server's
own listeners dropped 16' of the python's d16. find_server keeps the holders of the pid's own listeners and their
kin."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import OutputReader, assert_one_error_line, run_cli, wait_for

from accept_order.probes.listeners import listener_drops
from accept_order.probes.serving import find_server

TIMEOUT_S = 20.0
# The server: a parent and a forked child, both holding its listener on 127.0.0.1
SERVER = """
import os, socket, sys
listener = socket.create_server(("127.0.0.1", 0))
if os.fork() == 0:
    sys.stdin.read()
    os._exit(0)
print("port", listener.getsockname()[1], flush=True)
sys.stdin.read()
"""
# Another program on the same port and another address, started by a shell: no kin of the server's
OTHER = """
import signal, socket, sys
listener = socket.socket()
listener.bind(("127.0.0.2", int(sys.argv[1])))
listener.listen(1)
print("other", flush=True)
signal.pause()  # a shell's background job reads /dev/null: until killed
"""


@pytest.fixture
def port_mates() -> Iterator[tuple[int, int, int]]:
    """(the server's pid, its port, the other program's pid)."""
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    other = None
    try:
        assert server.stdout is not None
        port = int(OutputReader(server.stdout).wait_for(r"port (\d+)\n", TIMEOUT_S).group(1))
        shell = f'"{sys.executable}" -c "$0" {port} & echo pid $!; wait'
        other = subprocess.Popen(["sh", "-c", shell, OTHER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                 start_new_session=True)  # fmt: skip
        assert other.stdout is not None
        reader = OutputReader(other.stdout)
        mate = int(reader.wait_for(r"pid (\d+)\n", TIMEOUT_S).group(1))
        reader.wait_for(r"other\n", TIMEOUT_S)
        yield server.pid, port, mate
    finally:
        for proc in (server, other):
            if proc is not None:
                if proc is other:
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.kill()
                proc.wait(10)
                for stream in (proc.stdin, proc.stdout):
                    if stream is not None:
                        stream.close()


def _listeners_on(port: int) -> list[str]:
    """The witness: the addresses `ss -ltn` lists on the port."""
    out = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    return sorted(re.findall(r"(127\.0\.0\.\d+):\d+", out))


def test_a_program_on_the_same_port_is_not_the_server(port_mates: tuple[int, int, int]) -> None:
    pid, port, mate = port_mates
    assert wait_for(lambda: _listeners_on(port), lambda found: len(found) == 2, TIMEOUT_S, "both listeners") == [
        "127.0.0.1",
        "127.0.0.2",
    ]
    server = find_server(pid=pid)
    assert [row.address for row in server.listeners] == ["127.0.0.1"], server.listeners
    assert mate not in server.holders and pid in server.holders and len(server.holders) == 2, server.holders
    assert server.processes[0].pid == pid, server.processes


def test_observe_counts_the_drops_of_the_servers_own_listeners(port_mates: tuple[int, int, int]) -> None:
    """observe's reading of 'the server's own listeners dropped': by their inodes, not the port's every listener."""
    pid, port, _ = port_mates
    own = frozenset(row.inode for row in find_server(pid=pid).listeners)
    clients = [socket.socket() for _ in range(4)]  # the other's backlog of 1 holds two: the rest are dropped
    try:
        for client in clients:
            client.setblocking(False)
            client.connect_ex(("127.0.0.2", port))
        every = wait_for(lambda: listener_drops(port, None), lambda n: bool(n), TIMEOUT_S, "the other's drops")
        assert listener_drops(port, own) == 0, every
    finally:
        for client in clients:
            client.close()


@pytest.mark.parametrize("command", ["inspect", "observe"])
def test_a_port_two_programs_serve_names_both(port_mates: tuple[int, int, int], command: str) -> None:
    """--port of it read 'python3, master pid 20674 (nginx's), 4 workers': one line naming both, exit 1."""
    pid, port, mate = port_mates
    wait_for(lambda: _listeners_on(port), lambda found: len(found) == 2, TIMEOUT_S, "both listeners")
    args = [command, "--port", str(port), *(["--duration", "1s", "--no-trace"] if command == "observe" else [])]
    line = assert_one_error_line(run_cli(args), 1, f"port {port} is served by more than one program: ")
    assert f"(pid {pid}) on 127.0.0.1:{port}" in line and f"python3 (pid {mate}) on 127.0.0.2:{port}" in line, line
