"""A cluster of "hosts" on one machine for the multi-host tests (issue 29 §2): network namespaces on a bridge, each
running an sshd of its own, reached through an ssh config file of the cluster's own.

Use it as a module-scoped fixture, one cluster per test file. Measured here (Linux 6.18, 2 vCPUs; medians at load
~1.5, then at load ~6): making c1, c2 and srv takes 0.12 s (0.35 s) and removing them 0.12 s (0.16 s); then
`ssh c1 true` 0.17 s (0.27 s) and an execnet gateway with one round trip 0.27 s (0.41 s): each pays an ssh
connection, so keep a gateway rather than reopen it.

    from cluster import Cluster, cluster_fixture

    cluster = cluster_fixture(clients=2)  # hosts c1, c2 and srv

    def test_load(cluster: Cluster) -> None:
        subprocess.run(cluster.ssh("c1", "true"), check=True, timeout=30)
        gateway = execnet.makegateway(cluster.execnet_spec("c1"))  # ssh=-F <cfg> c1//python=<sys.executable>
        serve = [sys.executable, "-m", "accept_order", "serve", "--host", cluster.address("srv")]
        server = cluster.run_in("srv", serve, stdout=subprocess.PIPE, text=True)

or inside one test: `with Cluster(tmp_path, clients=2, server=True) as cluster: ...`. Imported by name, as
conftest's helpers are (tests/ is on sys.path; no test_ prefix, so pytest collects nothing here).

What it makes, all of it removed when the block ends, by an exception or Ctrl-C alike:
- a bridge `aoc<tag>` in the root namespace at 10.A.B.1/24: the /24 is one of the 4,096 in 10.176.0.0/12 that no
  route of the machine overlaps, <tag> its number in 3 hex digits, so that clusters made at once (threads, other
  pytest processes) never share a name or an address. Each holds an flock on /run/accept-order-clusters/<tag>.lock
  while it lives; netfilter is off on the bridge (a firewall's FORWARD policy cannot drop c1 -> srv);
- a namespace `aoc<tag>-<name>` per host (c1, c2, ... and srv), loopback up, a veth `aoc<tag><name>` inside at
  10.A.B.10 (srv) or 10.A.B.11, .12, ... (c1, c2, ...), its peer `aoc<tag><name>h` on the bridge;
- in each namespace `sshd -f CONFIG -D -e`, our child with PR_SET_PDEATHSIG (it dies with the thread that started
  it: make the cluster in a thread that outlives it), listening on the host's address; its host key, the authorized
  client key, PidFile, config and log live in the cluster's directory, as do the client key and known_hosts.
  Nothing in ~/.ssh or /etc/ssh is read or written. The cluster is ready once every sshd answers with its banner;
- `cluster.ssh_config`: a Host entry per host (`ssh -F cluster.ssh_config c1 true`), root, batch mode, the host key
  pinned in the cluster's known_hosts. A command there runs in root's shell without ~/.bashrc (cluster_ssh.py);
- `cluster.address(name)`, `cluster.bridge_address` (this namespace's, where the hosts reach a server of the test),
  `cluster.run_in(name, argv, **popen_kwargs)` to start a process in a namespace.

A module-scoped cluster's sshds stay alive between its tests: they are listed in children.KEPT_BY_FIXTURES, which
the suite's no-child-left check skips (their children, the ssh sessions, it still counts).

Teardown kills every process in each namespace (found by the namespace's inode, as `ip netns pids` does), deletes
the veths, the bridge and the namespaces; `cluster.leftovers()` names whatever survived, for tests to assert it is
empty. A run killed outright (SIGKILL, or a SIGTERM or SIGHUP, which pytest does not catch) loses its sshds with it
but leaves the namespaces and the bridge: the next Cluster made on the machine finds the lock nobody holds and
removes them.
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import children
import cluster_network
import pytest
from cluster_network import (
    LOCKS,
    NETNS,
    describe,
    ip_batches,
    named,
    netns_inode,
    pids_in,
    remove,
    routed,
    subnet_of,
    sweep_stale,
    take_lock,
)
from cluster_ssh import write_ssh_files
from waiting import wait_for

SSHD = "/usr/sbin/sshd"  # sshd re-executes itself, so it wants its absolute path
SSH_PORT = 22
SERVER_HOST, FIRST_CLIENT_HOST = 10, 11  # srv at .10, c1 at .11, c2 at .12, ...
PR_SET_PDEATHSIG = 1


def problem() -> str | None:
    """Why no cluster can be made here, or None."""
    if os.geteuid() != 0:
        return "needs root to make network namespaces and run sshd"
    for tool in ("ip", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} is not installed (Debian's openssh-server)"
    return None


LIBC = ctypes.CDLL(None, use_errno=True)  # loaded here, not between fork and exec


def dies_with(parent: int) -> Callable[[], None]:
    """For preexec_fn: the child gets SIGKILL when the thread that started it ends, even by SIGKILL."""

    def arm() -> None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked in the parent while it starts us
        LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the line above: nobody would kill us
            os._exit(1)

    return arm


@dataclass(frozen=True)
class Host:
    name: str  # c1, c2, ..., srv: the name in ssh_config
    namespace: str
    address: str
    inner_link: str  # the veth inside the namespace
    outer_link: str  # its peer on the bridge


class Cluster:
    """Client namespaces c1..cN and (with `server`) srv, each with an sshd; see the module's docstring."""

    def __init__(self, directory: Path, clients: int = 2, server: bool = True, timeout: float = 30.0) -> None:
        if not 0 <= clients <= 200:
            raise ValueError(f"clients must be 0 to 200, not {clients}")
        self.directory = Path(directory)
        self.names = [f"c{i}" for i in range(1, clients + 1)] + (["srv"] if server else [])
        self.timeout = timeout
        self.ssh_config = self.directory / "ssh_config"
        self.hosts: dict[str, Host] = {}
        self.tag = ""
        self.subnet: ipaddress.IPv4Network | None = None
        self._lock_fd: int | None = None
        # An inode names a namespace only while it lives (a freed one's number is soon reused, by other tests'
        # namespaces too): we hold each of ours open until teardown has looked for what survived in it.
        self._inodes: set[tuple[int, int]] = set()
        self._held: list[int] = []
        self._survivors: list[str] = []
        self._procs: list[subprocess.Popen[Any]] = []
        self._sshd: dict[str, subprocess.Popen[bytes]] = {}

    # --- what tests use

    def address(self, name: str) -> str:
        return self.hosts[name].address

    @property
    def bridge_address(self) -> str:
        """This (the root) namespace's address on the cluster's network: the hosts reach a server here."""
        assert self.subnet is not None, "the cluster is not made yet"
        return str(next(self.subnet.hosts()))

    def namespace(self, name: str) -> str:
        return self.hosts[name].namespace

    def netns_inode(self, name: str) -> int:
        """The inode of the host's network namespace, as /proc/PID/ns/net of a process there gives it."""
        inode = netns_inode(self.namespace(name))
        assert inode is not None, f"namespace {self.namespace(name)} is gone"
        return inode[1]

    def ssh(self, name: str, *command: str) -> list[str]:
        """argv of `ssh -F <ssh_config> NAME COMMAND...`."""
        return ["ssh", "-F", str(self.ssh_config), name, *command]

    def execnet_spec(self, name: str, python: str = sys.executable) -> str:
        return f"ssh=-F {self.ssh_config} {name}//python={python}"

    def run_in(self, name: str, argv: list[str], **popen_kwargs: Any) -> subprocess.Popen[Any]:
        """Start `argv` inside the host's namespace (`ip netns exec` execs it: the pid is the command's). The
        cluster's teardown kills it, as everything else in the namespace, and reaps it."""
        proc = subprocess.Popen(["ip", "netns", "exec", self.namespace(name), *argv], **popen_kwargs)
        self._procs.append(proc)
        return proc

    def leftovers(self) -> list[str]:
        """What of this cluster still exists: processes in its namespaces (deleted ones too, by their inodes), the
        namespaces, links, a child not reaped, the lock file. Empty after a clean teardown."""
        if not self.tag:
            return []
        namespaces, links = named(self.tag)
        alive = [describe(pid) for pid in pids_in(self._inodes)] if self._held else self._survivors
        found = [f"process {process} in the cluster's namespaces" for process in alive]
        found += [f"namespace {ns}" for ns in namespaces] + [f"link {link}" for link in links]
        found += [f"child {describe(p.pid)} not reaped" for p in self._procs if p.returncode is None]
        if (LOCKS / f"{self.tag}.lock").exists() and self._lock_fd is None:
            found.append(f"lock file {LOCKS / self.tag}.lock")
        return found

    # --- making and removing

    def __enter__(self) -> Cluster:
        reason = problem()
        if reason:
            pytest.skip(reason)
        try:
            self._start()
        except BaseException:  # Ctrl-C and pytest.skip too: nothing half-made stays
            self._stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._stop()

    def _start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        LOCKS.mkdir(parents=True, exist_ok=True)
        sweep_stale(self.timeout)
        keygen = [self._keygen("host_key"), self._keygen("client_key")]
        self._procs += keygen  # reaped by _stop if anything below fails
        self._reserve()
        self._make_network()
        for proc in keygen:
            if proc.wait(self.timeout) != 0:
                raise RuntimeError(f"ssh-keygen failed: {proc.stderr.read() if proc.stderr else ''}")
        self._write_ssh_files()
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege separation directory
        for name in self.names:
            self._start_sshd(name)
        self._wait_for_sshd()

    def _keygen(self, name: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"accept-order-cluster-{name}", "-f", name],
            cwd=self.directory,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    def _reserve(self) -> None:
        """Take a tag whose lock is free and whose /24 no route of the machine overlaps."""
        taken = routed()
        for number in cluster_network.candidates():
            subnet = subnet_of(number)
            if any(subnet.overlaps(net) for net in taken):
                continue
            fd = take_lock(LOCKS / f"{number:03x}.lock")
            if fd is None:
                continue
            os.write(fd, f"{os.getpid()}\n".encode())  # for people: whose it is (the flock is what counts)
            self.tag, self.subnet, self._lock_fd = f"{number:03x}", subnet, fd
            hosts = list(subnet.hosts())
            for i, name in enumerate(self.names):
                number_in_subnet = SERVER_HOST if name == "srv" else FIRST_CLIENT_HOST + i
                link = f"aoc{self.tag}{name}"
                self.hosts[name] = Host(
                    name, f"aoc{self.tag}-{name}", str(hosts[number_in_subnet - 1]), link, f"{link}h"
                )
            return
        raise RuntimeError(f"no free /24 in {cluster_network.SUBNETS} after {cluster_network.TRIES} tries")

    def _make_network(self) -> None:
        assert self.subnet is not None
        bridge = f"aoc{self.tag}"
        root = [f"netns add {h.namespace}" for h in self.hosts.values()]
        root += [
            f"link add {bridge} type bridge nf_call_iptables 0 nf_call_ip6tables 0 nf_call_arptables 0",
            f"addr add {self.bridge_address}/24 dev {bridge}",
            f"link set {bridge} up",
        ]
        for h in self.hosts.values():
            root += [
                f"link add {h.outer_link} type veth peer name {h.inner_link} netns {h.namespace}",
                f"link set {h.outer_link} master {bridge} up",
            ]
        ip_batches([(None, root)], self.timeout)
        self._held = [os.open(NETNS / h.namespace, os.O_RDONLY) for h in self.hosts.values()]
        self._inodes = {(st.st_dev, st.st_ino) for st in map(os.fstat, self._held)}
        inside = [
            (
                h.namespace,
                [f"addr add {h.address}/24 dev {h.inner_link}", f"link set {h.inner_link} up", "link set lo up"],
            )
            for h in self.hosts.values()
        ]
        ip_batches(inside, self.timeout)

    def _write_ssh_files(self) -> None:
        write_ssh_files(self.directory, [(h.name, h.address) for h in self.hosts.values()], SSH_PORT)

    def _start_sshd(self, name: str) -> None:
        config = self.directory / f"sshd-{name}.conf"
        # A Ctrl-C inside Popen (after the fork, before it returns) would lose the pid and leave sshd running: the
        # KeyboardInterrupt waits until the process is in _procs, where teardown finds it.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with open(self.directory / f"sshd-{name}.log", "wb") as log:
                proc = subprocess.Popen(
                    ["ip", "netns", "exec", self.namespace(name), SSHD, "-f", str(config), "-D", "-e"],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # a Ctrl-C at the terminal reaches pytest, whose teardown ends sshd
                    preexec_fn=dies_with(os.getpid()),
                )
            self._procs.append(proc)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        self._sshd[name] = proc
        children.KEPT_BY_FIXTURES.add(proc.pid)  # alive between a module fixture's tests on purpose

    def _sshd_states(self) -> dict[str, str]:
        states = {}
        for name, proc in self._sshd.items():
            if proc.poll() is not None:
                states[name] = f"exited {proc.returncode}"
                continue
            try:
                with socket.create_connection((self.address(name), SSH_PORT), timeout=1) as sock:
                    states[name] = "ready" if sock.recv(64).startswith(b"SSH-") else "no banner"
            except OSError as exc:
                states[name] = f"not yet ({exc.strerror or exc})"
        return states

    def _wait_for_sshd(self) -> None:
        states = wait_for(
            self._sshd_states,
            lambda s: all(v == "ready" or v.startswith("exited") for v in s.values()),
            self.timeout,
            "every sshd of the cluster to answer with its banner",
        )
        for name, state in states.items():
            if state != "ready":
                log = (self.directory / f"sshd-{name}.log").read_text(errors="replace").strip()
                raise RuntimeError(f"sshd in {self.namespace(name)} {state}: {log[-500:]}")

    def _stop(self) -> None:
        for proc in self._procs:  # ours by pid first: one still on its way into its namespace is not found there
            if proc.poll() is None:
                proc.kill()
        if self.tag:
            remove(self.tag, self._inodes, self.timeout)
        self._survivors = [describe(pid) for pid in pids_in(self._inodes)] if self._held else []
        for fd in self._held:
            os.close(fd)
        self._held = []
        for proc in self._procs:
            try:
                proc.wait(self.timeout)
            except subprocess.TimeoutExpired:
                pass  # named by leftovers()
            children.KEPT_BY_FIXTURES.discard(proc.pid)
        if self._lock_fd is not None:
            if named(self.tag) == ([], []):
                (LOCKS / f"{self.tag}.lock").unlink(missing_ok=True)  # under the lock: nobody takes it half-removed
            os.close(self._lock_fd)  # what stays is swept by the next cluster: its lock is free now
            self._lock_fd = None


def cluster_fixture(clients: int = 2, server: bool = True) -> Any:
    """A module-scoped pytest fixture named by the variable it is assigned to: `cluster = cluster_fixture()`."""

    @pytest.fixture(scope="module")
    def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
        with Cluster(tmp_path_factory.mktemp("cluster"), clients, server) as cluster:
            yield cluster

    return made
