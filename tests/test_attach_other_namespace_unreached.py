"""--attach of a server listening on loopback in another network namespace is refused, not measured elsewhere
(servers/attached_listening._reached_from_here).

A user's server in a namespace of its own (`unshare -Urn`, a rootless container) listened on 127.0.0.1:18095,
and a python http.server of this namespace on the same address: 'latency --attach <the first> -p 18095' read 50
served at 724/s as the attached pid's, all 50 in the other server's log, none in its own (as root, bpftrace then
said 0 of the 50 were accepted by the attached process). With nobody listening here it read '50 x ECONNREFUSED'.
The witnesses are the kernel's: inside the namespace a connection to the port is taken, from here one is refused
(or queued on this test's own listener, which the tool must leave alone).

A server under `ip netns exec` reached by its veth address is not refused for a 0.0.0.0 listener here on the same
port (which takes only connections to this namespace's own addresses): it was, 'connections to 10.215.73.2:18731
made here go to pid 25286 (python3)', where the attach served 50, all 50 in the attached server's log. The witness:
the server's own count of the requests it answered, and this test's listener left unconnected.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare (util-linux)"
)

# In a network namespace of its own: lo up, a listener on 127.0.0.1:PORT, the kernel's answer to a connection made
# inside, printed; it holds the listener until stdin closes
CHILD = r"""
import fcntl, socket, struct, sys
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    req = struct.pack("16sH22x", b"lo", 0)
    flags = struct.unpack("16sH22x", fcntl.ioctl(s, 0x8913, req))[1]
    fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))
listener = socket.socket()
listener.bind(("127.0.0.1", int(sys.argv[1])))
listener.listen(8)
with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10):
    print("taken", flush=True)
sys.stdin.read()
"""


# In a network namespace of its own: an HTTP server on 0.0.0.0:PORT printing a line for each request it answers
HTTP = r"""
import http.server, sys
class Answer(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
        print("answered", flush=True)
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("0.0.0.0", int(sys.argv[1])), Answer)
print("listening", flush=True)
server.serve_forever()
"""


@pytest.fixture
def port() -> int:
    """A port free here a moment ago (the namespace has its own ports)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def elsewhere(port: int) -> Iterator[int]:
    """The pid of a process in a network namespace of its own listening on 127.0.0.1:port there."""
    proc = subprocess.Popen(
        ["unshare", "--net", sys.executable, "-c", CHILD, str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().split() == [b"taken"]  # the kernel there takes it
        assert os.stat(f"/proc/{proc.pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino
        yield proc.pid
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(20)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture
def routed(port: int) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """(the server, its address) of an HTTP server in a network namespace of its own, on 0.0.0.0:port there,
    reached from here over a veth pair."""
    if shutil.which("ip") is None or shutil.which("nsenter") is None:
        pytest.skip("needs ip(8) and nsenter(1)")
    server = subprocess.Popen(
        ["unshare", "--net", sys.executable, "-c", HTTP, str(port)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    tag, net = os.getpid() % 100000, os.getpid() % 250
    ours, theirs, address = f"aoun{tag}a", f"aoun{tag}b", f"10.216.{net}.2"
    try:
        assert server.stdout is not None and server.stdout.readline() == "listening\n"
        inside = ["nsenter", "-t", str(server.pid), "-n", "ip"]
        for command in (
            ["ip", "link", "add", ours, "type", "veth", "peer", "name", theirs, "netns", str(server.pid)],
            ["ip", "addr", "add", f"10.216.{net}.1/30", "dev", ours],
            ["ip", "link", "set", ours, "up"],
            [*inside, "addr", "add", f"{address}/30", "dev", theirs],
            [*inside, "link", "set", theirs, "up"],
        ):
            subprocess.run(command, check=True)
        yield server, address
    finally:
        subprocess.run(["ip", "link", "del", ours], capture_output=True)  # its peer goes with it
        server.kill()
        server.communicate(timeout=20)


def _attach(pid: int, port: int, *more: str) -> subprocess.CompletedProcess[str]:
    argv = ["latency", "--attach", str(pid), "-p", str(port), "-n", "3", "-c", "3", "--timeout", "1s", *more]
    return subprocess.run([sys.executable, "-m", "accept_order", *argv], capture_output=True, text=True, timeout=120)


def test_nobody_listening_here_is_said_not_refused_connections(elsewhere: int, port: int) -> None:
    with socket.socket() as here:  # the kernel here: nobody takes it
        assert here.connect_ex(("127.0.0.1", port)) != 0
    done = _attach(elsewhere, port)
    assert done.returncode == 1 and not done.stdout, done
    (line,) = done.stderr.splitlines()
    assert f"--attach: pid {elsewhere} (python3) listens on 127.0.0.1:{port} in another network namespace" in line
    assert "connections to 127.0.0.1 never leave this namespace" in line and f"nsenter -t {elsewhere} -n" in line


def test_a_listener_here_on_the_same_address_is_not_measured_as_theirs(elsewhere: int, port: int) -> None:
    with socket.socket() as ours:
        ours.bind(("127.0.0.1", port))
        ours.listen(8)  # never accepts: whatever the tool sent here would wait in its queue
        done = _attach(elsewhere, port)
        ours.setblocking(False)
        with pytest.raises(BlockingIOError):
            ours.accept()  # nothing was driven at it
    assert done.returncode == 1 and not done.stdout, done
    (line,) = done.stderr.splitlines()
    assert f"in another network namespace than this tool's, and connections to 127.0.0.1:{port} made here go to" in line
    assert f"pid {os.getpid()} " in line, line  # this test's process, which holds ours


def test_a_routed_address_is_attached_beside_a_wildcard_listener_here(
    routed: tuple[subprocess.Popen[str], str], port: int
) -> None:
    server, address = routed
    with socket.socket() as ours:
        ours.bind(("0.0.0.0", port))
        ours.listen(8)  # never accepts: takes connections to this namespace's own addresses, not the veth's peer
        done = _attach(server.pid, port, "--host", address, "--protocol", "http")
        ours.setblocking(False)
        with pytest.raises(BlockingIOError):
            ours.accept()  # nothing was driven at it
    assert done.returncode == 0, done.stderr
    server.kill()
    answered, _ = server.communicate(timeout=20)
    assert answered.splitlines().count("answered") >= 3, done.stdout  # the attached server's own count
