"""A tiny backlog and a burst of connections: the kernel's overflow counters rise, and every
connection is still counted (served, or failed with its error).

Runs `accept-order run` inside a network namespace of its own (`unshare -n`), so the counters it
reads are this run's alone and the host's are untouched. Needs root and util-linux `unshare`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from accept_order.probes import evidence

# The child: check it really is in another network namespace than the test, bring lo up (a new
# namespace has it down), declare the namespace private for the evidence, then run the CLI.
CHILD = r"""
import fcntl, os, socket, struct, sys
host_netns = int(sys.argv[1])
if os.stat("/proc/self/ns/net").st_ino == host_netns:
    sys.exit("child: still in the test's network namespace")
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    req = struct.pack("16sH22x", b"lo", 0)
    flags = struct.unpack("16sH22x", fcntl.ioctl(s, SIOCGIFFLAGS, req))[1]
    fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))
os.environ[sys.argv[2]] = "1"
from accept_order.cli.app import main
main(sys.argv[3:])
"""

DRIVEN = 8
WORK_MS = 300
TIMEOUT_S = 1.5


def _unshare_problem() -> str | None:
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux-only"
    if os.geteuid() != 0:
        return "needs root to create a network namespace (unshare -n)"
    if shutil.which("unshare") is None:
        return "util-linux 'unshare' is not installed"
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        return f"'unshare -n' does not work here: {probe.stderr.strip() or probe.returncode}"
    return None


@pytest.fixture(scope="module")
def netns_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, object], str]:
    problem = _unshare_problem()
    if problem:
        pytest.skip(problem)
    path = tmp_path_factory.mktemp("netns") / "run.json"
    host_netns = os.stat("/proc/self/ns/net").st_ino
    # One worker that spends 300 ms per connection, a backlog of 1 (the accept queue holds 2), and
    # 8 connections started 1 ms apart: most SYNs find the queue full. Whatever the machine's load,
    # at most 5 can be answered within the 1.5 s timeout (one every 300 ms), so some must fail.
    args = [
        "run", "--mode", "blocking", "--workers", "1", "--connections", str(DRIVEN),
        "--gap-ms", "1", "--work-ms", str(WORK_MS), "--backlog", "1",
        "--timeout", f"{TIMEOUT_S}s", "--no-settle", "--json", str(path),
    ]  # fmt: skip
    proc = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", CHILD, str(host_netns), evidence.PRIVATE_ENV, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    with open(path) as f:
        return json.load(f), proc.stdout


def test_every_connection_is_counted(netns_run: tuple[dict[str, object], str]) -> None:
    doc, _ = netns_run
    assert (doc["schema"], doc["version"], doc["kind"]) == ("accept-order", 2, "run")
    recs = doc["records"]
    assert isinstance(recs, list) and len(recs) == DRIVEN
    served = [r for r in recs if r["error"] is None and r["worker"] is not None]
    failed = [r for r in recs if r not in served]
    assert len(served) + len(failed) == DRIVEN
    assert 1 <= len(served) <= TIMEOUT_S * 1000 // WORK_MS
    assert len(failed) >= DRIVEN - TIMEOUT_S * 1000 // WORK_MS
    for r in failed:
        assert r["error"], r  # each failure says why (a timeout or a refusal)


def test_overflow_counters_rose_in_a_private_namespace(netns_run: tuple[dict[str, object], str]) -> None:
    doc, _ = netns_run
    ev = doc["evidence"]
    assert isinstance(ev, dict)
    assert ev["shared_namespace"] is False
    assert ev["netns"]["private"] is True
    assert ev["netns"]["inode"] != os.stat("/proc/self/ns/net").st_ino
    counters = ev["counters"]
    assert counters.get("TcpExtListenOverflows", 0) > 0, ev
    assert counters.get("TcpExtListenDrops", 0) >= counters["TcpExtListenOverflows"]
    (row,) = ev["listeners"]["start"]
    if row["source"] == "netlink":
        assert row["backlog"] == 1


def test_output_says_private_namespace_and_shows_failures(netns_run: tuple[dict[str, object], str]) -> None:
    _, stdout = netns_run
    assert "private network namespace" in stdout
    assert "ListenOverflows +" in stdout
    assert f"driven {DRIVEN}" in stdout
    assert "connections failed" in stdout
