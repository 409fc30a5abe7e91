"""A lone `[::]` listener with IPV6_V6ONLY in another network namespace, attached from outside it: its row was read
from /proc/PID/net/tcp6, which has no column for the flag, and taken as dual-stack, so `--attach PID --host
127.0.0.1` read it as the listener IPv4 connections go to. The listeners of another namespace are now dumped over
netlink inside it (a thread that setns(2) into it), where the flag is known.

The witness is the kernel's own answer inside that namespace: a connection to 127.0.0.1 on the port is refused,
one to ::1 is accepted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator

import pytest

from accept_order.core.errors import NotServing
from accept_order.probes.listeners import listening_sockets_of, serving_on
from accept_order.servers.attached_listening import check_listening
from accept_order.servers.registry import HELPERS

TIMEOUT_S = 20.0
PORT = 18061  # the namespace is the test's own: no other process listens there

# In a network namespace of its own: lo up, a lone [::] listener with IPV6_V6ONLY, then the kernel's answer to a
# connection to each loopback address, printed; it holds the listener until stdin closes
CHILD = r"""
import errno, fcntl, socket, struct, sys
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    req = struct.pack("16sH22x", b"lo", 0)
    flags = struct.unpack("16sH22x", fcntl.ioctl(s, SIOCGIFFLAGS, req))[1]
    fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))
listener = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
listener.bind(("::", int(sys.argv[1])))
listener.listen(8)
answers = []
for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    with socket.socket(family, socket.SOCK_STREAM) as c:
        answers.append("refused" if c.connect_ex((host, int(sys.argv[1]))) == errno.ECONNREFUSED else "taken")
print(" ".join(answers), flush=True)
sys.stdin.read()
"""


@pytest.fixture
def v6only_elsewhere() -> Iterator[int]:
    """The pid of a process in a network namespace of its own, holding a lone [::] listener with IPV6_V6ONLY."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare (util-linux)")
    proc = subprocess.Popen(
        ["unshare", "--net", sys.executable, "-c", CHILD, str(PORT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        answers = proc.stdout.readline().split()
        assert answers == ["refused", "taken"], answers  # the kernel there: IPv4 is not taken, IPv6 is
        assert os.stat(f"/proc/{proc.pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino
        yield proc.pid
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(TIMEOUT_S)
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_lone_v6only_listener_in_another_namespace_takes_no_ipv4(v6only_elsewhere: int) -> None:
    rows = listening_sockets_of(PORT, [v6only_elsewhere])
    assert [(row.address, row.v6only) for row in rows] == [("::", True)], rows
    assert serving_on(rows, "127.0.0.1") == []
    assert serving_on(rows, "::1") == rows
    with pytest.raises(NotServing, match=r"holds no listener on 127\.0\.0\.1:18061; nobody listens"):
        check_listening("127.0.0.1", PORT, [v6only_elsewhere], [v6only_elsewhere], helpers=HELPERS)
    # the listener is found for ::1; the load would not reach it from here (attached_listening._reached_from_here)
    with pytest.raises(NotServing, match=r"on \[::1\]:18061 in another network namespace than this tool's, and "):
        check_listening("::1", PORT, [v6only_elsewhere], [v6only_elsewhere], helpers=HELPERS)
