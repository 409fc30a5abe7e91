"""A lone `[::]` listener in another network namespace whose IPV6_V6ONLY cannot be read is said to be unknown.

latency --attach (and run --attach) take the listeners connections to --host go to (probes/listeners.serving_on). A
server in another network namespace is asked inside it by netlink, which says IPV6_V6ONLY; where that namespace may
not be entered (setns needs CAP_SYS_ADMIN), its /proc/PID/net/tcp6 is read, which has no column for it, and a lone
`[::]` was taken to take IPv4 connections (Linux's default) without a word: the run went on, and its refused
connections were the only sign. The report says now that whether it takes them is not known.

Here: a server in a network namespace of its own (unshare -n) listening on `[::]` with IPV6_V6ONLY set, the witness
`ss -e` run inside that namespace (v6only:1); the tool run as root without CAP_SYS_ADMIN (setpriv), at the server's
address on a veth pair (its loopback is not reached from here, and --attach refuses it: test_attach_other_namespace_
unreached.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import OutputReader

TIMEOUT_S = 60.0
SERVER = """
import socket, sys
s = socket.socket(socket.AF_INET6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.bind(("::", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
sys.stdin.read()
"""
NO_SYS_ADMIN = ["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin"]
PROBE = """
import sys
from accept_order.probes.listeners import dual_stack_assumed, listening_sockets_of
rows = listening_sockets_of(int(sys.argv[1]), [int(sys.argv[2])])
print([(r.address, r.source, r.v6only) for r in rows], [r.address for r in dual_stack_assumed(rows, "127.0.0.1")])
"""

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(c) for c in ("unshare", "setpriv", "nsenter", "ss")),
    reason="root, unshare, setpriv, nsenter and ss",
)


@pytest.fixture
def v6only_elsewhere() -> Iterator[tuple[int, int, str]]:
    """(pid, port, address) of a `[::]` IPV6_V6ONLY listener in a network namespace of its own, whose IPv4 address
    this namespace reaches over a veth pair (its loopback no connection from here reaches: --attach refuses it)."""
    proc = subprocess.Popen(
        ["unshare", "-n", sys.executable, "-c", SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    tag, net = os.getpid() % 100000, os.getpid() % 250
    ours, theirs, address = f"aov6{tag}a", f"aov6{tag}b", f"10.214.{net}.2"
    try:
        assert proc.stdout is not None
        port = int(OutputReader(proc.stdout).wait_for(r"(\d+)\n", TIMEOUT_S)[1])
        inside = ["nsenter", "-t", str(proc.pid), "-n", "ip"]
        for command in (
            ["ip", "link", "add", ours, "type", "veth", "peer", "name", theirs, "netns", str(proc.pid)],
            ["ip", "addr", "add", f"10.214.{net}.1/30", "dev", ours],
            ["ip", "link", "set", ours, "up"],
            [*inside, "addr", "add", f"{address}/30", "dev", theirs],
            [*inside, "link", "set", theirs, "up"],
        ):
            subprocess.run(command, check=True)
        yield proc.pid, port, address  # unshare execs the interpreter: one process
    finally:
        subprocess.run(["ip", "link", "del", ours], capture_output=True)  # its peer goes with it
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def test_a_v6only_listener_read_from_proc_is_said_unknown(
    v6only_elsewhere: tuple[int, int, str], tmp_path: Path
) -> None:
    pid, port, address = v6only_elsewhere
    ss = subprocess.run(
        ["nsenter", "-t", str(pid), "-n", "ss", "-ltnHe", f"sport = :{port}"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "v6only:1" in ss.stdout, ss.stdout  # the kernel's word: no IPv4 connection reaches it
    assert os.stat(f"/proc/{pid}/ns/net").st_ino != os.stat("/proc/self/ns/net").st_ino

    probe = [sys.executable, "-c", PROBE, str(port), str(pid)]
    entered = subprocess.run(probe, capture_output=True, text=True, check=True, timeout=TIMEOUT_S).stdout
    assert entered.strip() == "[('::', 'netlink', True)] []"  # as root: netlink inside it, the flag known
    refused = subprocess.run([*NO_SYS_ADMIN, *probe], capture_output=True, text=True, check=True, timeout=TIMEOUT_S)
    assert refused.stdout.strip() == "[('::', 'proc', None)] ['::']"  # /proc: not known, and taken as dual-stack

    out = tmp_path / "attach.json"
    args = ["latency", "--attach", str(pid), "--host", address, "--port", str(port), "-n", "5", "-c", "1"]
    args += ["--json", str(out)]
    run = subprocess.run(
        [*NO_SYS_ADMIN, sys.executable, "-m", "accept_order", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "COLUMNS": "400"},
    )
    said = " ".join(run.stdout.split())
    assert f"whether [::]:{port} takes IPv4 connections (to {address}) is not known" in said, run.stdout + run.stderr
    # said to root without CAP_SYS_ADMIN: what the run lacked, not that root has it (was: 'as root has')
    assert "setns needs CAP_SYS_ADMIN over it, which the run lacked" in said and "as root" not in said, said
    assert json.loads(out.read_text())["evidence"]["v6only_unknown"] == [f"[::]:{port}"]
