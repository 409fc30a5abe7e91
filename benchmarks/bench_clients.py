"""Load from client hosts (issue 29 §3): one client namespace against two, the same server, and what the engine
(execnet over ssh) costs on its own.

The hosts are network namespaces on a bridge, each with its own sshd: the cluster of tests/cluster.py, imported
from tests/ by sys.path (the suite's own, used as it is). It needs root, ip, ssh and Debian's openssh-server;
where it cannot be made the script says why in one line, prints its ratios as n/a and exits 0. In srv,
`accept-order serve -w W --host SRV --port 8080` is the one server of every run; each run is `accept-order
latency --target SRV:8080 -w W --duration D -c C --driver-procs P --json FILE` (a closed loop for a fixed time)
from:
- here, the root namespace on the bridge, without --clients: the reference (its drivers are its children), with
  P drivers, and with 2P (`here-2x`: as many as two hosts run between them, the like-for-like reference for two);
- inside c1's namespace, without --clients (`in-c1`: `ip netns exec`): c1's network path (two veths and the
  bridge to srv, where here crosses one veth) with no ssh and no engine, the like-for-like reference for c1;
- c1 (`--clients c1 --ssh-config CLUSTER/ssh_config`): one client host, P drivers there;
- c1 and c2 (`--clients c1,c2`): two hosts, the concurrency split between them, P drivers on each.
The five alternate within a round, the order rotating every round. Printed per run: connections/s (served over
the load's wall time, from the JSON), the generator's CPU per connection (summary.client_cpu_us here,
hosts[].client_cpu_us_per_connection on each host), the server's workers' CPU per connection, and the engine's
own CPU over the load's window (from the server's first CPU tick to its last): the coordinator's (the command's
own process, all its threads; its drivers apart), the ssh clients', the sshd sessions' and the remote
interpreters' (execnet's end of the channel on each host, its drivers apart), as shares of one CPU and, all
together, per connection. Each thread's CPU time in ns (/proc/PID/task/TID/schedstat), read every 50 ms by a
thread here (proc_cpu.py).

Then the start-up: `latency --target SRV:8080 --duration 0.3s -c 4` (a short load, so that a driver lives long
enough to be seen: one of `-n 2` could start and end between two samples) from here (P drivers), from c1 and from
c1,c2, timed from the command's start (processes' start times in /proc, 10 ms ticks) to its first ssh (the
coordinator's own start-up is before it), to the last host's Python (forked by its sshd: the ssh handshake is
before it), to its last driver (the remote import, hello and version check, clock rounds and the load handed over
are before it; the go comes START_MARGIN_S = 0.1 s after the drivers are ready) and to its exit; reaching the
hosts alone (loads/hosts/gateways.Gateways.connect: ssh, the remote Python, accept-order imported there, its
version checked); and `ssh -F CLUSTER/ssh_config c1 true`, the bare handshake.

On this machine every namespace shares the same CPUs with the server's workers: a second host cannot raise the
rate here, its drivers take CPU from the first host's and from the server. What a cluster of namespaces can show
is what the engine costs beside the generator, which is what stays when the hosts are real machines.

Run: .venv/bin/python benchmarks/bench_clients.py [--rounds 5] [--duration 5] [--concurrency 50]
[--driver-procs 2] [--workers 2] [--no-warm-up]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # bench_nginx_load's helpers, proc_cpu
sys.path.insert(0, str(HERE.parent / "experiments"))  # the one-line parser
sys.path.insert(0, str(HERE.parent / "tests"))  # cluster.py: the suite's cluster of namespaces

from _cli import OneLineParser, positive_int  # noqa: E402  (experiments/_cli.py)
from bench_nginx_load import print_machine, seconds, terminated  # noqa: E402
from proc_cpu import TICK_S, CpuSampler, Stat, children  # noqa: E402

from accept_order.core.hosts import ClientHosts  # noqa: E402
from accept_order.core.signals import Terminated  # noqa: E402
from accept_order.loads.hosts import load_side  # noqa: E402
from accept_order.loads.hosts.gateways import Gateways  # noqa: E402

PROG = "bench_clients.py"
PORT = 8080
SAMPLE_S = 0.05  # load runs: the window is found to this
STARTUP_SAMPLE_S = 0.01  # start-up runs: their drivers live STARTUP_LOAD_S and more
STARTUP_LOAD_S = 0.3
RUN_TIMEOUT_S = 300.0
HERE, HERE_2X = "here", "here-2x"  # from the root namespace: P drivers, and 2P (as many as two hosts run)
IN_C1 = "in-c1"  # the local command run inside c1's namespace: c1's network path, no ssh, no engine
LOCAL = (HERE, HERE_2X, IN_C1)
VARIANTS = (HERE, HERE_2X, IN_C1, "c1", "c1,c2")
STARTUPS = (HERE, "c1", "c1,c2")
MILESTONES = {"ssh": "first ssh", "remote": "last remote Python", "drivers": "last driver", "exit": "exit"}
ENGINE = ("coordinator", "ssh", "sshd", "remote")  # the roles that carry the channel (remote: execnet's end)
SERVE_TIMEOUT_S = 30.0
MOVED_S = 0.015  # the server's CPU moved: more than one tick's worth


def classify(root: str, stat: Stat, parent: Stat | None) -> str | None:
    """The role of a process under a root: the command (`here`), a client host's sshd listener, the server."""
    if root == "server":
        return "server" if parent is not None else None  # serve's workers, not serve itself
    if parent is None:
        return "coordinator" if root == "here" else None  # a host's sshd listener is the cluster's, not the run's
    if stat.name == "python" or stat.name.startswith("python3"):
        return "drivers" if parent.name.startswith("python") else "remote"
    return "ssh" if root == "here" else "sshd"


@dataclass
class Run:
    variant: str
    rate: float = 0.0
    served: int = 0
    failed: int = 0
    generator_us: dict[str, float | None] = field(default_factory=dict)  # by host ("here" for local)
    used_s: dict[str, float] = field(default_factory=dict)  # CPU in the window: coordinator, ssh, sshd, remote, server
    window_s: float = 0.0

    def us(self, *roles: str) -> float:
        """The roles' CPU per connection finished, in µs."""
        finished = self.served + self.failed
        return 1e6 * sum(self.used_s[r] for r in roles) / finished if finished else 0.0

    def share(self, *roles: str) -> float:
        """The roles' CPU over the load's window, as a share of one CPU."""
        return sum(self.used_s[r] for r in roles) / self.window_s if self.window_s > 0 else 0.0


class Bench:
    def __init__(self, cluster: Any, args: argparse.Namespace, scratch: Path) -> None:
        self.cluster = cluster
        self.args = args
        self.scratch = scratch
        self.server_address = cluster.address("srv")
        self.listeners: dict[int, str] = {}  # the client hosts' sshd pids, found among our children
        self.serve_pid = 0

    def start_server(self) -> None:
        argv = [sys.executable, "-m", "accept_order", "serve", "--host", self.server_address, "--port", str(PORT)]
        with open(self.scratch / "serve.log", "wb") as log:
            serve = self.cluster.run_in(
                "srv", [*argv, "-w", str(self.args.workers)], stdout=log, stderr=subprocess.STDOUT
            )
        self.serve_pid = serve.pid
        deadline = time.monotonic() + SERVE_TIMEOUT_S
        while not _answers(self.server_address):  # its workers up: a connection gets a worker's reply
            if serve.poll() is not None or time.monotonic() > deadline:
                said = (self.scratch / "serve.log").read_text(errors="replace").strip()[-300:]
                raise SystemExit(f"{PROG}: error: serve in srv did not answer on :{PORT}: {said!r}")
            time.sleep(0.05)  # a poll of the port: nothing to wait on across the namespace
        for name in ("c1", "c2"):
            inode = self.cluster.netns_inode(name)
            for pid in children(os.getpid()):
                if _netns(pid) == inode:
                    self.listeners[pid] = name

    def command(self, variant: str, *load: str) -> list[str]:
        argv = [sys.executable, "-m", "accept_order", "latency", "--target", f"{self.server_address}:{PORT}"]
        argv += ["-w", str(self.args.workers), *load]
        if variant == IN_C1:
            return ["ip", "netns", "exec", self.cluster.namespace("c1"), *argv]  # exec'd: the pid is the command's
        if variant not in LOCAL:
            argv += ["--clients", variant, "--ssh-config", str(self.cluster.ssh_config)]
        return argv

    def run(self, variant: str, argv: list[str], every_s: float) -> tuple[CpuSampler, float]:
        """Run one command with its processes sampled; (the sampler, its wall time). A failure stops the bench."""
        began = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            roots = {proc.pid: "here", self.serve_pid: "server", **{pid: "client" for pid in self.listeners}}
            with CpuSampler(roots, classify, every_s) as sampler:
                _, err = proc.communicate(timeout=RUN_TIMEOUT_S)
            wall = time.monotonic() - began
        finally:
            if proc.poll() is None:  # Ctrl-C or SIGTERM here: the command stops its hosts' loads on SIGTERM
                proc.terminate()
                proc.wait(RUN_TIMEOUT_S)
        if proc.returncode != 0:
            raise SystemExit(f"{PROG}: error: {variant}: exit {proc.returncode}: {err.strip()[-300:]!r}")
        return sampler, wall

    def load(self, variant: str) -> Run:
        path = self.scratch / f"{variant}.json"
        path.unlink(missing_ok=True)
        a = self.args
        procs = 2 * a.driver_procs if variant == HERE_2X else a.driver_procs
        load = ["--duration", f"{a.duration}s", "-c", str(a.concurrency), "--driver-procs", str(procs)]
        sampler, _ = self.run(variant, self.command(variant, *load, "--json", str(path)), SAMPLE_S)
        result = json.loads(path.read_text())
        run = Run(variant, float(result["summary"]["throughput"]), int(result["summary"]["count"]))
        run.failed = sum(result["errors"].values())
        if variant in LOCAL:
            run.generator_us["here"] = result["summary"].get("client_cpu_us")
        for host in result.get("hosts", []):
            run.generator_us[host["destination"]] = host["client_cpu_us_per_connection"]
        first, last = window(sampler)
        run.window_s = sampler.samples[last][0] - sampler.samples[first][0]
        for role in (*ENGINE, "server"):
            run.used_s[role] = sampler.at(last, role) - sampler.at(first, role)
        return run

    def startup(self, variant: str) -> dict[str, float]:
        """Seconds from a short run's start to each of its milestones (MILESTONES: the first ssh started,
        the last host's Python forked by its sshd, the last driver started; the exit)."""
        sampler, wall = self.run(
            variant, self.command(variant, "--duration", f"{STARTUP_LOAD_S}s", "-c", "4"), STARTUP_SAMPLE_S
        )
        began = sampler.started["coordinator"][0]
        seen = {"ssh": min, "remote": max, "drivers": max}
        found = {
            role: (pick(sampler.started[role]) - began) * TICK_S
            for role, pick in seen.items()
            if sampler.started.get(role)
        }
        if "drivers" not in found:
            raise SystemExit(f"{PROG}: error: {variant}: no driver process seen in {wall:.2f} s")
        return {**found, "exit": wall}


def window(sampler: CpuSampler) -> tuple[int, int]:
    """The samples around the load: the last before the server's CPU moved, the first after it stopped."""
    values = [totals.get("server", 0.0) for _, totals in sampler.samples]
    base, top = values[0], values[-1]
    first = next((i for i, v in enumerate(values) if v > base + MOVED_S), 1) - 1
    last = next((i for i, v in enumerate(values) if v >= top - MOVED_S), len(values) - 1)
    return max(first, 0), max(last, first + 1)


def _answers(address: str) -> bool:
    try:
        with socket.create_connection((address, PORT), timeout=1) as sock:
            return sock.recv(64).startswith(b"worker")
    except OSError:
        return False


def _netns(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def connect_only(cluster: Any, destinations: str) -> float:
    """Seconds to reach the hosts as a run does (gateways.Gateways.connect: ssh, the remote Python started,
    accept-order imported there, its hello and version checked), then closed."""
    gateways = Gateways(ClientHosts(tuple(destinations.split(",")), str(cluster.ssh_config)))
    began = time.monotonic()
    try:
        gateways.connect(load_side.__name__)
        return time.monotonic() - began
    finally:
        gateways.close()


def ssh_true(cluster: Any) -> float:
    began = time.monotonic()
    subprocess.run(cluster.ssh("c1", "true"), check=True, timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)
    return time.monotonic() - began


def us(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def engine_roles(variant: str) -> tuple[str, ...]:
    return ("coordinator",) if variant in LOCAL else ENGINE


def engine_text(run: Run) -> str:
    roles = engine_roles(run.variant)
    parts = ", ".join(f"{role} {run.share(role):.2%}" for role in roles)
    return f"{parts} of one CPU; all {run.share(*roles):.2%}, {us(run.us(*roles))} µs/conn"


def print_run(number: int, run: Run) -> None:
    generator = ", ".join(f"{host} {us(v)}" for host, v in run.generator_us.items())
    print(
        f"{number:>5}  {run.variant:<7} {run.rate:>7,.0f} conn/s ({run.failed} failed, window {run.window_s:.2f} s)"
        f"  generator µs/conn: {generator}; server's workers {us(run.us('server'))}; engine: {engine_text(run)}"
    )


def ratio_line(label: str, values: list[float]) -> str:
    return f"{label}: median {statistics.median(values):.3f} (min {min(values):.3f}, max {max(values):.3f})"


def summary(
    rounds: list[dict[str, Run]],
    startups: list[dict[str, dict[str, float]]],
    ssh_s: list[float],
    connects: list[dict[str, float]],
) -> None:
    def median(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return statistics.median(known) if known else None

    for variant, reference, label in (
        ("c1", HERE, "one host / here"),
        ("c1", IN_C1, "one host / the same from inside c1 without ssh"),
        ("c1,c2", HERE_2X, "two hosts / here with as many drivers"),
        ("c1,c2", HERE, "two hosts / here"),
    ):
        ratios = [r[variant].rate / r[reference].rate for r in rounds if r[reference].rate > 0]
        print(ratio_line(f"connections/s, {label}", ratios) + f" over {len(ratios)} rounds")
    generator = "; ".join(
        f"{variant}: " + ", ".join(f"{h} {us(median([r[variant].generator_us.get(h) for r in rounds]))}" for h in hosts)
        for variant, hosts in (*((v, ["here"]) for v in LOCAL), ("c1", ["c1"]), ("c1,c2", ["c1", "c2"]))
    )
    print(f"generator's CPU per connection, median µs: {generator}")
    for variant in VARIANTS:
        roles = engine_roles(variant)
        shares = ", ".join(f"{r} {statistics.median([x[variant].share(r) for x in rounds]):.2%}" for r in roles)
        every = statistics.median([x[variant].share(*roles) for x in rounds])
        per = statistics.median([x[variant].us(*roles) for x in rounds])
        generated = median([sum(filter(None, x[variant].generator_us.values())) for x in rounds]) or 0.0
        hosts = max(1, len(variant.split(",")))
        print(
            f"engine's CPU during the load from {variant}, median: {shares} of one CPU; all {every:.2%}, "
            f"{us(per)} µs/conn ({per / (generated / hosts) if generated else 0:.1%} of the generator's)"
        )
    said = "; ".join(
        f"{v}: "
        + ", ".join(
            f"{label} {statistics.median([st[v][m] for st in startups]):.2f}"
            for m, label in MILESTONES.items()
            if all(m in st[v] for st in startups)
        )
        for v in STARTUPS
    )
    print(f"start-up ({STARTUP_LOAD_S:g} s load), median of {len(startups)}, s from the command's start: {said}")
    reach = ", ".join(f"{v} {statistics.median([c[v] for c in connects]):.2f} s" for v in STARTUPS[1:])
    bare = statistics.median(ssh_s)
    print(f"of which reaching the hosts (ssh, Python, import, hello), alone: {reach}; ssh c1 true {bare:.2f} s")
    extra = "; ".join(
        f"{label} +{statistics.median([s[v]['drivers'] - s[HERE]['drivers'] for s in startups]):.2f} s to the drivers, "
        f"+{statistics.median([s[v]['exit'] - s[HERE]['exit'] for s in startups]):.2f} s to the exit"
        for v, label in (("c1", "one host"), ("c1,c2", "two hosts"))
    )
    print(f"the engine's start-up, median of paired differences from here: {extra}")


def measure(cluster: Any, args: argparse.Namespace, scratch: Path) -> None:
    bench = Bench(cluster, args, scratch)
    bench.start_server()
    a = args
    print(
        f"cluster: namespaces c1, c2 and srv on a bridge, an sshd in each (tests/cluster.py); server: accept-order "
        f"serve -w {a.workers} in srv on {bench.server_address}:{PORT}; load: latency --target, closed loop, "
        f"{a.duration:g} s, -c {a.concurrency} (split across hosts), --driver-procs {a.driver_procs} per host"
    )
    if args.warm_up:
        bench.load(HERE)  # warm up: the interpreters' caches, the server's first connections
    rounds: list[dict[str, Run]] = []
    startups: list[dict[str, dict[str, float]]] = []
    ssh_s: list[float] = []
    connects: list[dict[str, float]] = []
    for number in range(1, args.rounds + 1):
        order = VARIANTS[number % len(VARIANTS) :] + VARIANTS[: number % len(VARIANTS)]
        runs = {variant: bench.load(variant) for variant in order}
        for variant in VARIANTS:
            print_run(number, runs[variant])
        rounds.append(runs)
        startups.append({variant: bench.startup(variant) for variant in order if variant in STARTUPS})
        ssh_s.append(ssh_true(cluster))
        connects.append({v: connect_only(cluster, v) for v in STARTUPS[1:]})
    summary(rounds, startups, ssh_s, connects)


def main() -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=positive_int, default=5)
    parser.add_argument("--duration", type=seconds, default=5.0, help="seconds per load run (default 5)")
    parser.add_argument("--concurrency", type=positive_int, default=50, help="connections in flight (default 50)")
    parser.add_argument("--driver-procs", type=positive_int, default=2, help="per client host (default 2)")
    parser.add_argument("--workers", type=positive_int, default=2, help="the server's workers (default 2)")
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="skip the first, unreported run from here (a smoke test's figures need no warm caches)",
    )
    args = parser.parse_args()
    import cluster as cluster_module  # tests/cluster.py (imports pytest and the suite's conftest)

    reason = cluster_module.problem()
    if reason:
        print(f"no cluster of namespaces here ({reason}): connections/s, one host / here: median n/a")
        return 0
    signal.signal(signal.SIGTERM, terminated)  # like Ctrl-C: every `with` and `finally` ends its processes
    load_before = print_machine()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-clients-") as scratch:
            made = cluster_module.Cluster(Path(scratch) / "cluster", clients=2, server=True)
            with made:
                measure(made, args, Path(scratch))
            left = made.leftovers()
    except KeyboardInterrupt as exc:
        print(f"{PROG}: interrupted; the cluster and its processes removed", file=sys.stderr)
        return 143 if isinstance(exc, Terminated) else 130
    print(f"cluster removed: {'; '.join(left) if left else 'nothing left'}")
    print(f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
