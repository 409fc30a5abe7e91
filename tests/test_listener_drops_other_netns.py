"""The server's listeners' drops are read in the server's network namespace, not in ours.

'latency --attach W1,W2 --host 10.77.0.2 --port 18555' of `accept-order serve` in a network namespace of its own
(reached over a veth), beside another program's backlog-1 listener on 0.0.0.0:18555 in ours that never accepts,
read '... ListenOverflows +220, ListenDrops +220 (...; the server's listeners dropped 220)': the drops of the other
program's listener, the server's own (backlog 511, in its namespace) having dropped none. The witness here is the
kernel's count on each socket itself (SO_MEMINFO)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from dropping_listener import dropped_more, own_drops

from accept_order.probes.evidence import EvidenceCapture
from accept_order.probes.listeners import listener_drops

UNSHARE = shutil.which("unshare")
# in a network namespace of its own: a listener that drops nothing, its count (SO_MEMINFO) said once listening
CHILD = """
import socket, struct, sys
s = socket.socket()
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(511)
print(struct.unpack_from("=I", s.getsockopt(socket.SOL_SOCKET, 55, 36), 32)[0], flush=True)
sys.stdin.read()
"""
pytestmark = pytest.mark.skipif(os.geteuid() != 0 or UNSHARE is None, reason="needs root and unshare(1)")


@pytest.fixture
def two_namespaces() -> Iterator[tuple[int, int, socket.socket]]:
    """(port, pid of a process whose listener on port is in another namespace, ours on the same port that dropped)."""
    with socket.socket() as ours:
        ours.bind(("0.0.0.0", 0))
        ours.listen(1)
        port = ours.getsockname()[1]
        dropped_more(ours)
        assert UNSHARE is not None
        argv = [UNSHARE, "--net", sys.executable, "-c", CHILD, str(port)]
        child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "0", "the other namespace's listener dropped nothing"
            yield port, child.pid, ours
        finally:
            child.kill()
            child.wait(timeout=30)


def test_the_drops_are_read_where_the_server_listens(two_namespaces: tuple[int, int, socket.socket]) -> None:
    port, pid, ours = two_namespaces
    assert os.stat(f"/proc/{pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino
    assert listener_drops(port, "127.0.0.1") == own_drops(ours) > 0  # ours, asked in ours
    assert listener_drops(port, "127.0.0.1", [pid]) == 0  # the server's, in its namespace


def test_the_evidence_keeps_the_servers_drops(two_namespaces: tuple[int, int, socket.socket]) -> None:
    port, pid, ours = two_namespaces
    capture = EvidenceCapture(private=False, host="127.0.0.1")
    capture.before()
    capture.listeners(port, "start", [pid])
    dropped_more(ours)  # during the run, by our listener: not the server's
    capture.listeners(port, "end", [pid])
    evidence = capture.after(port, [])
    assert evidence["listener_drops"] == 0
    # the listeners said are the server's too: its backlog 511, not ours (1)
    assert [row["backlog"] for row in evidence["listeners"]["start"]] == [511], evidence["listeners"]


SETPRIV = shutil.which("setpriv")
AS_NOBODY = """
import sys
from accept_order.probes.listeners import listener_drops
print(listener_drops(int(sys.argv[1]), "127.0.0.1", [int(sys.argv[2])]))
"""


@pytest.mark.skipif(SETPRIV is None, reason="needs setpriv(1)")
def test_a_server_whose_namespace_cannot_be_read_has_no_drops_said() -> None:
    """As nobody, root's /proc/PID/ns/net cannot be read: where the server listens is unknown, and a listener on its
    port in ours may be another program's (80e69e2's run, as nobody: the other program's 658 drops)."""
    with socket.socket() as ours:
        ours.bind(("127.0.0.1", 0))
        ours.listen(1)
        dropped_more(ours)
        assert SETPRIV is not None
        argv = [SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", sys.executable, "-c", AS_NOBODY]
        asked = subprocess.run([*argv, str(ours.getsockname()[1]), str(os.getpid())], capture_output=True, text=True)
        assert asked.returncode == 0, asked.stderr
        assert asked.stdout.strip() == "None", asked.stdout
