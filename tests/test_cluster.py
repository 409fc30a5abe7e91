"""The test cluster itself (tests/cluster.py): each namespace answers ssh from inside itself, an execnet gateway runs
in the namespace it was opened to, clusters made at once do not clash, and nothing is left when one ends, by any
path (a normal exit, an exception, Ctrl-C, its owner SIGKILLed)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import cluster as cluster_module
import cluster_network
import execnet
import psutil
import pytest
from cluster import Cluster, cluster_fixture, pids_in
from conftest import OutputReader, wait_for

cluster = cluster_fixture(clients=2)

TESTS = Path(__file__).resolve().parent


def remote(c: Cluster, name: str, command: str) -> str:
    done = subprocess.run(c.ssh(name, command), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def netns_of(pid: int) -> int:
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def gone(proc: psutil.Process) -> bool:
    """Ended: no longer there, or a zombie its new parent has yet to reap."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def commands_in(c: Cluster, name: str) -> list[str]:
    """The command names of the processes in the host's namespace (those that exit meanwhile left out)."""
    names = []
    for pid in pids_in({(os.stat(f"/run/netns/{c.namespace(name)}").st_dev, c.netns_inode(name))}):
        try:
            names.append(Path(f"/proc/{pid}/comm").read_text().strip())
        except OSError:
            continue
    return names


def test_each_host_answers_ssh_from_its_own_namespace(cluster: Cluster) -> None:
    assert cluster.names == ["c1", "c2", "srv"]
    inodes = set()
    for name in cluster.names:
        # the shell's own namespace (readlink of /proc/$$, not of a child: ssh runs the command in that shell)
        command = "readlink /proc/$$/ns/net; ip -o link show lo; ip -o -4 addr show scope global"
        link, loopback, addresses = remote(cluster, name, command).split("\n", 2)
        assert link == f"net:[{cluster.netns_inode(name)}]"
        assert ",UP," in loopback, loopback
        assert f"inet {cluster.address(name)}/24" in addresses and addresses.count("inet ") == 1, addresses
        inodes.add(link)
    assert len(inodes) == 3 and f"net:[{netns_of(os.getpid())}]" not in inodes
    assert [cluster.address(n).rsplit(".", 1)[1] for n in cluster.names] == ["11", "12", "10"]


def test_an_execnet_gateway_runs_in_c1(cluster: Cluster) -> None:
    gateway = execnet.makegateway(cluster.execnet_spec("c1"))
    try:
        channel = gateway.remote_exec("import os, sys; channel.send((os.getpid(), sys.executable))")
        pid, python = channel.receive(60)
        assert python == sys.executable
        assert netns_of(pid) == cluster.netns_inode("c1")  # one pid namespace: the remote pid is visible here
    finally:
        gateway.exit()
    # closing the gateway ends the remote interpreter: in c1 only sshd is left
    wait_for(lambda: commands_in(cluster, "c1"), lambda names: names == ["sshd"], 30, "c1's python to end after exit()")


def test_hosts_reach_each_other_across_the_bridge(cluster: Cluster) -> None:
    server = cluster.run_in(
        "srv",
        [sys.executable, "-c", "import socket, sys; s = socket.create_server((sys.argv[1], 9000)); print('up', "
         "flush=True); c, _ = s.accept(); c.sendall(b'hello from srv')", cluster.address("srv")],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    out = OutputReader(server.stdout)  # type: ignore[arg-type]
    out.wait_for("up", 30)
    got = remote(cluster, "c2", f"{sys.executable} -c \"import socket; print(socket.create_connection(('"
                 f"{cluster.address('srv')}', 9000), timeout=10).recv(64).decode())\"")  # fmt: skip
    assert got == "hello from srv"
    assert server.wait(30) == 0


def test_hosts_reach_this_namespace_at_the_bridge_address(cluster: Cluster) -> None:
    with socket.create_server((cluster.bridge_address, 0)) as listener:
        port = listener.getsockname()[1]
        connect = f"import socket; socket.create_connection(('{cluster.bridge_address}', {port}), timeout=10)"
        client = subprocess.Popen(cluster.ssh("c1", f'{sys.executable} -c "{connect}"'))
        listener.settimeout(60)
        accepted, (peer, _) = listener.accept()
        accepted.close()
    assert peer == cluster.address("c1")
    assert client.wait(60) == 0


def test_nothing_of_ssh_in_home_or_etc_is_touched(cluster: Cluster) -> None:
    def state(path: Path) -> list[tuple[str, int]]:
        return sorted((p.name, p.stat().st_mtime_ns) for p in path.iterdir()) if path.is_dir() else []

    before = [state(Path.home() / ".ssh"), state(Path("/etc/ssh")), (Path.home() / ".ssh").exists()]
    remote(cluster, "c2", "true")
    assert [state(Path.home() / ".ssh"), state(Path("/etc/ssh")), (Path.home() / ".ssh").exists()] == before


def test_two_clusters_at_once_do_not_clash(cluster: Cluster, tmp_path: Path) -> None:
    with Cluster(tmp_path, clients=1, server=False) as other:
        assert other.tag != cluster.tag and other.subnet != cluster.subnet
        assert not set(other.hosts.values()) & set(cluster.hosts.values())
        assert remote(other, "c1", "readlink /proc/$$/ns/net") == f"net:[{other.netns_inode('c1')}]"
        assert remote(cluster, "c1", "readlink /proc/$$/ns/net") == f"net:[{cluster.netns_inode('c1')}]"
    assert other.leftovers() == []
    assert remote(cluster, "c1", "echo still here") == "still here"


def test_a_taken_subnet_is_passed_over(cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two clusters that draw the same /24 (as two pytest processes at once may): the second takes the next."""
    taken = int(cluster.tag, 16)
    free = (taken + 1) % cluster_network.TAGS
    monkeypatch.setattr(cluster_network, "candidates", lambda: [taken, free])
    with Cluster(tmp_path, clients=1, server=False) as other:
        assert other.tag == f"{free:03x}"
        assert remote(other, "c1", "true") == ""
    assert other.leftovers() == []


def test_nothing_is_left_after_the_block(tmp_path: Path) -> None:
    with Cluster(tmp_path, clients=2, server=True) as c:
        sleeper = c.run_in("c1", ["sleep", "1000"])
        # a process in c2 that no one of ours is the parent of: only the namespace says it is the cluster's
        remote(c, "c2", "setsid sleep 1001 </dev/null >/dev/null 2>&1 &")
        wait_for(lambda: commands_in(c, "c2"), lambda names: "sleep" in names, 30, "the detached sleep in c2")
        namespaces, tag = [c.namespace(n) for n in c.names], c.tag
        detached = next(p for p in map(psutil.Process, pids_in(c._inodes)) if p.cmdline() == ["sleep", "1001"])
    assert c.leftovers() == []
    assert gone(detached)
    assert sleeper.returncode == -signal.SIGKILL
    assert not any(Path("/run/netns", ns).exists() for ns in namespaces)
    assert not any(Path("/proc/sys/net/ipv4/conf", f"aoc{tag}{suffix}").exists() for suffix in ("", "c1h", "srvh"))


@pytest.mark.parametrize("interruption", [RuntimeError, KeyboardInterrupt])
def test_an_exception_inside_leaves_nothing(tmp_path: Path, interruption: type[BaseException]) -> None:
    with pytest.raises(interruption):
        with Cluster(tmp_path, clients=1, server=True) as c:
            c.run_in("srv", ["sleep", "1000"])
            raise interruption("inside the block")
    assert c.tag and c.leftovers() == []


def test_a_child_dies_with_the_process_that_started_it() -> None:
    """sshd's PR_SET_PDEATHSIG, on its own: a process that starts `sleep` as the cluster starts sshd is SIGKILLed."""
    starter = subprocess.Popen(
        [sys.executable, "-c", "import os, subprocess, sys; sys.path.insert(0, sys.argv[1]); from cluster import "
         "dies_with; print(subprocess.Popen(['sleep', '1000'], preexec_fn=dies_with(os.getpid())).pid, flush=True); "
         "sys.stdin.read()", str(TESTS)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        sleeper = psutil.Process(int(OutputReader(starter.stdout).wait_for(r"(\d+)\n", 60).group(1)))  # type: ignore[arg-type]
        assert sleeper.name() == "sleep"
    finally:
        starter.kill()
        starter.wait(30)
    wait_for(lambda: gone(sleeper), bool, 30, "the sleep to die with its parent")


def test_what_a_sigkilled_owner_left_is_swept_by_the_next_cluster(tmp_path: Path) -> None:
    """Its namespaces outlive it; the next cluster made on the machine removes them (here, or in another pytest
    process sweeping first: either way nothing of it is left)."""
    owner = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); from cluster import Cluster; "
         "c = Cluster(sys.argv[2], clients=1).__enter__(); print('tag', c.tag, flush=True); sys.stdin.read()",
         str(TESTS), str(tmp_path / "owner")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        tag = OutputReader(owner.stdout).wait_for(r"tag (\w+)\n", 60).group(1)  # type: ignore[arg-type]
        inodes = {(st.st_dev, st.st_ino) for st in (os.stat(p) for p in Path("/run/netns").glob(f"aoc{tag}-*"))}
        sshds = [psutil.Process(int((tmp_path / "owner" / f"sshd-{n}.pid").read_text())) for n in ("c1", "srv")]
        assert len(inodes) == 2 and {p.pid for p in sshds} <= set(pids_in(inodes))
    finally:
        owner.kill()
        owner.wait(30)
    with Cluster(tmp_path / "next", clients=1, server=False):
        assert not list(Path("/run/netns").glob(f"aoc{tag}-*"))
        assert not Path(f"/run/accept-order-clusters/{tag}.lock").exists()
        assert not Path(f"/proc/sys/net/ipv4/conf/aoc{tag}").exists()
    assert all(gone(sshd) for sshd in sshds)


def test_a_cluster_that_fails_to_start_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sshd exits at once (here: `false` in its place): one error naming the namespace, and the half-made
    cluster removed."""
    monkeypatch.setattr(cluster_module, "SSHD", "/bin/false")
    made = Cluster(tmp_path, clients=1, server=False)
    with pytest.raises(RuntimeError, match=r"sshd in aoc\w+-c1 exited 1"):
        with made:
            pass
    assert made.tag and made.leftovers() == []
