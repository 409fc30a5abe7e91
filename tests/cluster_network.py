"""The machine-level half of tests/cluster.py: subnets and names reserved under a lock, namespaces' processes
found by inode and killed, links and namespaces removed, and what a SIGKILLed cluster left swept away."""

from __future__ import annotations

import fcntl
import ipaddress
import json
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

SUBNETS = ipaddress.IPv4Network("10.176.0.0/12")  # away from Docker's 172.17/16, flannel's 10.244/16, k8s' 10.96/12
TAGS = 4096  # the /24s in SUBNETS, numbered by the tag
TRIES = 64
LOCKS = Path("/run/accept-order-clusters")
NETNS = Path("/run/netns")
# what ip says when the machine, not our commands, is the reason it cannot make the network: skip, don't fail
CANNOT_HERE = ("Operation not permitted", "Permission denied", "not supported", "Unknown device type")


def candidates() -> list[int]:
    """The tags (subnets) to try, in order: a random few, so that clusters made at once rarely even collide."""
    return random.sample(range(TAGS), TRIES)


def subnet_of(tag: int) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network((int(SUBNETS.network_address) + (tag << 8), 24))


def netns_inode(namespace: str) -> tuple[int, int] | None:
    try:
        st = os.stat(NETNS / namespace)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def pids_in(inodes: set[tuple[int, int]]) -> list[int]:
    """Processes (not zombies: they have left their namespaces) whose network namespace is one of `inodes`."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                st = os.stat(f"/proc/{entry.name}/ns/net")
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in inodes:
                found.append(int(entry.name))
    return found


def describe(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = "?"
    return f"pid {pid} ({cmd[:100]})"


def end_processes(inodes: set[tuple[int, int]], timeout: float) -> None:
    """SIGKILL everything in those namespaces, again until nothing is left (sshd may fork while we kill)."""
    deadline = time.monotonic() + timeout
    while (pids := pids_in(inodes)) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)  # polling for the kills to land, not synchronisation: the loop ends on the state


def named(tag: str) -> tuple[list[str], list[str]]:
    """The namespaces and root-namespace links a cluster with this tag made (or left)."""
    prefix = f"aoc{tag}"
    namespaces = sorted(p.name for p in NETNS.glob(f"{prefix}-*")) if NETNS.is_dir() else []
    links = sorted(name for _, name in socket.if_nameindex() if name.startswith(prefix))
    return namespaces, links


def remove(tag: str, inodes: set[tuple[int, int]], timeout: float) -> None:
    """End the processes, then delete links (synchronous, unlike a namespace's own teardown) and namespaces."""
    namespaces, links = named(tag)
    inodes = inodes | {ino for ns in namespaces if (ino := netns_inode(ns))}
    end_processes(inodes, timeout)
    commands = [f"link del {link}" for link in links] + [f"netns del {ns}" for ns in namespaces]
    if commands:
        subprocess.run(["ip", "-force", "-batch", "-"], input="\n".join(commands), capture_output=True, text=True)


def take_lock(path: Path) -> int | None:
    """An fd holding the flock on `path`, or None if a living cluster holds it. The owner's death releases it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.stat(path).st_ino == os.fstat(fd).st_ino:  # not a file its owner unlinked while we opened it
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def sweep_stale(timeout: float = 10.0) -> None:
    """Remove what clusters whose owners died (SIGKILL) left: their lock files are held by nobody."""
    for path in LOCKS.glob("*.lock"):
        fd = take_lock(path)
        if fd is None:
            continue
        try:
            remove(path.stem, set(), timeout)
            if named(path.stem) == ([], []):
                path.unlink()
        finally:
            os.close(fd)


def routed() -> list[ipaddress.IPv4Network]:
    """Every IPv4 destination the root namespace routes, in any table (the default route aside)."""
    out = subprocess.run(["ip", "-j", "-4", "route", "show", "table", "all"], capture_output=True, text=True)
    nets = []
    for route in json.loads(out.stdout or "[]"):
        dst = route.get("dst", "default")
        if dst != "default":
            try:
                nets.append(ipaddress.IPv4Network(dst, strict=False))
            except ValueError:
                continue
    return nets


def ip_batches(batches: Sequence[tuple[str | None, list[str]]], timeout: float) -> None:
    """Run `ip [-n NS] -batch -` for each (namespace, commands) at once; skip or fail on the first error."""
    procs = [
        subprocess.Popen(
            ["ip", *(["-n", ns] if ns else []), "-batch", "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for ns, _ in batches
    ]
    errors = [
        proc.communicate("\n".join(cmds) + "\n", timeout=timeout)[1]
        for proc, (_, cmds) in zip(procs, batches, strict=True)
    ]
    failed = [err.strip() for proc, err in zip(procs, errors, strict=True) if proc.returncode != 0]
    if failed and any(words in failed[0] for words in CANNOT_HERE):
        pytest.skip(f"cannot make network namespaces and a bridge here: {failed[0]}")
    if failed:
        raise RuntimeError(f"ip could not make the cluster's network: {failed[0]}")
