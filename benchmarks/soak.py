"""Soak: the whole command set, again and again, each run ended by a random signal at a random moment;
afterwards nothing of the tool's may be left on the machine (issue 16, section 5).

Each iteration picks, from a seeded RNG, a command (run, compare, herd, latency, sweep, burst, ramp, reload,
serve), a server where the command takes one (builtin, and nginx, haproxy, gunicorn where installed), a
signal (SIGINT, SIGINT twice 10 ms apart, SIGTERM, SIGHUP, SIGKILL; INT, TERM and HUP sent either to the
tool or, as a terminal does, to its whole process group) and a moment between start-up and a little after
the run's natural end. The tool runs in a session of its own with --json; once it has exited, the checks:

- processes: this script is a child subreaper (PR_SET_CHILD_SUBREAPER), so whatever the tool started and
  left is re-parented to it: any descendant still alive a few seconds after the tool (its reaper has up to
  a second to end a killed server's group) is left behind; it is named, then killed
- directories: /tmp/accept-order-*-PID-* of the tool's pid
- network namespaces (/run/netns), mounts (/proc/self/mountinfo: tracefs, nsfs), host sysctls
  (tcp_migrate_req and the others below): compared before and after each run, and at the end with how
  they were before the first. Others on the machine (a test suite) change them too, and undo it: a change
  during a run is noted; one still there at the end is left behind
- the run: no hang; the exit status is 0, 128 + the signal (129, 130, 143), or the signal itself (a
  SIGKILL, or a signal in the interpreter's start-up, before the tool's handlers exist); no traceback; a
  --json file, when written, parses; exit 0 wrote one

Run: .venv/bin/python benchmarks/soak.py [--iterations 50] [--seed 16] [--servers builtin,nginx,haproxy,gunicorn]
Exit status 1 when anything was left behind or a run hung; --strict also for unexpected statuses/tracebacks.
"""

from __future__ import annotations

import ctypes
import glob
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psutil

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "experiments"))
from _cli import OneLineParser, positive_int  # noqa: E402  (experiments/_cli.py: one-line usage errors)

PR_SET_CHILD_SUBREAPER = 36
HANG_S = 60.0  # a run that has not exited this long after its signal hangs
STARTUP_S = 0.1  # a signal this soon after the start may land before the tool's handlers exist (~45 ms here)
GRACE_S = 5.0  # for what the tool started to be gone once it has exited (its reaper's group kill is 1 s)
SYSCTLS = (
    "net/ipv4/tcp_migrate_req",
    "net/core/somaxconn",
    "net/ipv4/tcp_max_syn_backlog",
    "net/ipv4/tcp_syncookies",
    "net/ipv4/ip_local_port_range",
    "fs/nr_open",
    "kernel/perf_event_paranoid",
)
SIGNALS = ("SIGINT", "SIGINT twice", "SIGTERM", "SIGHUP", "SIGKILL")

# name -> (argv after the command name, its length in seconds here when nothing stops it, takes --server).
# Small, so that a signal can land anywhere in a run: start-up, mid-run, teardown, after the end.
COMMANDS: dict[str, tuple[list[str], float, bool]] = {
    "run": (["-w", "2", "-n", "12", "--gap-ms", "100"], 1.3, True),
    "compare": (["-w", "2", "-n", "8", "--gap-ms", "50"], 0.6, True),
    "herd": (["-w", "2", "-n", "8"], 0.3, True),
    "latency": (["-w", "2", "--duration", "2s", "-c", "8"], 2.2, True),
    "sweep": (["-w", "2", "--duration", "1s", "-c", "8", "--accept-batch", "1,0"], 2.3, True),
    "burst": (["-w", "2", "--clients", "200,500"], 0.5, True),
    "ramp": (["-w", "2", "--concurrency-steps", "4,16", "--step", "1s", "--keep-going"], 2.6, True),
    "reload": (["-w", "2", "--duration", "2s", "-c", "8", "--how", "leave", "--modes", "reuseport"], 4.3, False),
    "serve": (["-w", "2"], 2.0, True),  # never ends by itself: always signalled
}
MODE_OPTION = {"compare": "--modes", "herd": "--modes", "burst": "--modes"}  # the others take -m


@dataclass
class Case:
    command: str
    server: str
    signal: str
    group: bool  # sent to the tool's whole process group (a terminal's Ctrl-C or hang-up)
    at_s: float

    def label(self) -> str:
        to = " group" if self.group else ""
        return f"{self.command:8} {self.server:8} {self.signal}{to} @{self.at_s:.2f}s"


@dataclass
class Outcome:
    case: Case
    status: int | None = None
    wall_s: float = 0.0
    landed: bool = True  # the signal was sent before the tool had exited
    left: list[str] = field(default_factory=list)  # what was left behind
    unexpected: list[str] = field(default_factory=list)  # a wrong status, a traceback, an unreadable file
    meanwhile: list[str] = field(default_factory=list)  # machine-wide changes during the run (maybe others')


def subreaper() -> None:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("soak: error: cannot become a child subreaper (Linux 3.4+ only)")


def machine_state() -> dict[str, Any]:
    sysctls = {}
    for name in SYSCTLS:
        try:
            with open(os.path.join("/proc/sys", name)) as f:
                sysctls[name.replace("/", ".")] = " ".join(f.read().split())
        except OSError:
            pass
    with open("/proc/self/mountinfo") as f:
        mounts = sorted({" ".join((line.split()[4], line.split(" - ")[1].split()[0])) for line in f})
    netns = sorted(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else []
    return {"sysctls": sysctls, "mounts": mounts, "netns": netns}


def servers_here(wanted: list[str]) -> list[str]:
    from accept_order.servers.registry import server_kind

    return [name for name in wanted if name == "builtin" or server_kind(name).missing() is None]


def first_mode(server: str) -> str:
    from accept_order.servers.registry import server_kind

    return "epoll" if server == "builtin" else next(iter(server_kind(server).modes()))


def pick(rng: random.Random, servers: list[str]) -> Case:
    command = rng.choice(sorted(COMMANDS))
    _, length, takes_server = COMMANDS[command]
    server = rng.choice(servers) if takes_server else "builtin"
    sig = rng.choice(SIGNALS)
    group = sig != "SIGKILL" and rng.random() < 0.5
    return Case(command, server, sig, group, round(rng.uniform(0.0, 1.3 * length), 3))


def argv(case: Case, json_path: str) -> list[str]:
    options, _, takes_server = COMMANDS[case.command]
    args = [sys.executable, "-m", "accept_order", case.command, *options, "--json", json_path]
    if takes_server:
        args += ["--server", case.server, MODE_OPTION.get(case.command, "-m"), first_mode(case.server)]
    return args


def child_setup() -> None:
    # The tool as a terminal would start it, whatever this script inherited (a background job ignores
    # SIGINT; nohup ignores SIGHUP).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def send(proc: subprocess.Popen[bytes], case: Case) -> None:
    numbers = [signal.SIGINT, signal.SIGINT] if case.signal == "SIGINT twice" else [signal.Signals[case.signal]]
    for i, signum in enumerate(numbers):
        if i:
            time.sleep(0.01)  # a double Ctrl-C, 10 ms apart: part of the case, not synchronisation
        try:
            os.killpg(proc.pid, signum) if case.group else proc.send_signal(signum)
        except ProcessLookupError:
            return


def reap_orphans() -> None:
    """Collect the exit of whatever was re-parented to us (a subreaper must, or it keeps zombies)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def alive_descendants() -> list[psutil.Process]:
    reap_orphans()
    alive = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.Error:
            pass
    return alive


def describe(proc: psutil.Process) -> str:
    try:
        return f"pid {proc.pid} ({' '.join(proc.cmdline())[:100] or proc.name()})"
    except psutil.Error:
        return f"pid {proc.pid}"


def until(probe: Any, timeout_s: float) -> Any:
    """probe() until it returns something falsy or time runs out; its last answer."""
    deadline = time.monotonic() + timeout_s
    while (answer := probe()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return answer


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two machine_state()s: sysctls, mounts, named network namespaces."""
    found = []
    for name, value in before["sysctls"].items():
        if after["sysctls"].get(name) != value:
            found.append(f"sysctl {name} = {after['sysctls'].get(name)} (was {value})")
    for what in ("mounts", "netns"):
        found += [f"{what}: added {m}" for m in sorted(set(after[what]) - set(before[what]))]
        found += [f"{what}: removed {m}" for m in sorted(set(before[what]) - set(after[what]))]
    return found


def check_left(outcome: Outcome, tool_pid: int, before: dict[str, Any]) -> None:
    """What the tool (pid `tool_pid`, exited) left: processes (ours, by the subreaper), its directories (named
    with its pid). Machine-wide state (sysctls, mounts, named namespaces) cannot be told apart from what others
    on the machine change meanwhile: a change is noted here, and left behind if still there at the end."""
    for proc in until(alive_descendants, GRACE_S):
        outcome.left.append(f"process {describe(proc)}")
        try:
            proc.kill()
        except psutil.Error:
            pass
    pattern = os.path.join(tempfile.gettempdir(), f"accept-order-*-{tool_pid}-*")
    for path in until(lambda: sorted(glob.glob(pattern)), GRACE_S):
        outcome.left.append(f"directory {path}")
        shutil.rmtree(path, ignore_errors=True)
    outcome.meanwhile = changes(before, machine_state())


def check_run(outcome: Outcome, err: str, json_path: str) -> None:
    case, status = outcome.case, outcome.status
    signum = int(signal.SIGINT if case.signal == "SIGINT twice" else signal.Signals[case.signal])
    # Within the interpreter's own start-up no handler of the tool exists yet: the signal's default action
    # (killed by it; Python's own KeyboardInterrupt traceback for SIGINT) is all there can be, and nothing
    # has been started. Later, only SIGKILL may end the tool by the signal itself.
    startup = case.at_s < STARTUP_S
    allowed = {0, -signum} if case.signal == "SIGKILL" else {0, 128 + signum} | ({-signum, 1} if startup else set())
    if status not in allowed:
        outcome.unexpected.append(f"exit status {status} (expected one of {sorted(allowed)})")
    if "Traceback" in err and not (startup and err.rstrip().endswith("KeyboardInterrupt")):
        outcome.unexpected.append("traceback: " + err.strip().splitlines()[-1][:160])
    if os.path.exists(json_path):
        try:
            with open(json_path) as f:
                json.load(f)
        except (OSError, ValueError) as exc:
            outcome.unexpected.append(f"--json file unreadable: {exc}")
    elif status == 0:
        outcome.unexpected.append("exit 0 without its --json file")
    leftovers = [n for n in os.listdir(os.path.dirname(json_path)) if n not in ("out.json", "stdout", "stderr")]
    if leftovers:
        outcome.unexpected.append(f"files beside the result: {leftovers}")


def run_case(case: Case, work: str) -> Outcome:
    outcome = Outcome(case)
    os.makedirs(work)
    json_path = os.path.join(work, "out.json")
    before = machine_state()
    started = time.monotonic()
    with open(os.path.join(work, "stdout"), "wb") as out, open(os.path.join(work, "stderr"), "wb") as err:
        proc = subprocess.Popen(
            argv(case, json_path),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=child_setup,
        )
        try:
            proc.wait(case.at_s)
            outcome.landed = False  # it ended before the signal was due
        except subprocess.TimeoutExpired:
            send(proc, case)
        try:
            outcome.status = proc.wait(HANG_S)
        except subprocess.TimeoutExpired:
            outcome.left.append(f"hang: no exit {HANG_S:g} s after {case.signal}")
            for child in psutil.Process(proc.pid).children(recursive=True):
                child.kill()
            proc.kill()
            outcome.status = proc.wait()
    outcome.wall_s = time.monotonic() - started
    with open(os.path.join(work, "stderr"), errors="replace") as f:
        check_run(outcome, f.read(), json_path)
    check_left(outcome, proc.pid, before)
    return outcome


def summary(outcomes: list[Outcome], seed: int, wall_s: float, changed: list[str]) -> list[str]:
    landed = Counter(o.case.signal + (" (group)" if o.case.group else "") for o in outcomes if o.landed)
    statuses = Counter(o.status for o in outcomes)
    left = [f"#{i}: {what}" for i, o in enumerate(outcomes, 1) for what in o.left]
    left += [f"at the end: {what}" for what in changed]
    noted = [f"#{i}: {what}" for i, o in enumerate(outcomes, 1) for what in o.meanwhile]
    odd = [f"#{i}: {what}" for i, o in enumerate(outcomes, 1) for what in o.unexpected]
    load = os.getloadavg()
    return [
        f"accept-order soak: {len(outcomes)} iterations, seed {seed}, {wall_s:.0f} s; {platform.system()} "
        f"{platform.release()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}",
        "commands: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(o.case.command for o in outcomes).items())),
        "servers: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(o.case.server for o in outcomes).items())),
        "signals that landed mid-run: "
        + (", ".join(f"{k} {v}" for k, v in sorted(landed.items())) or "none")
        + f"; {sum(not o.landed for o in outcomes)} runs ended before their signal",
        "exit statuses: " + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=lambda kv: kv[0] or 0)),
        "left behind (processes, /tmp/accept-order-* directories, network namespaces, mounts, sysctls), hangs: "
        + ("none" if not left else f"{len(left)}"),
        *(f"  {line}" for line in left),
        "unexpected (exit status, traceback, result file): " + ("none" if not odd else f"{len(odd)}"),
        *(f"  {line}" for line in odd),
        "machine-wide changes during a run, gone by the end (others' doing or transient): "
        + ("none" if not noted else f"{len(noted)}"),
        *(f"  {line}" for line in noted),
    ]


def main() -> int:
    parser = OneLineParser(prog="soak", description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=positive_int, default=50)
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--servers", default="builtin,nginx,haproxy,gunicorn", help="those not installed are left out")
    parser.add_argument("--strict", action="store_true", help="also fail on unexpected statuses and tracebacks")
    args = parser.parse_args()
    from accept_order.servers.registry import KINDS

    unknown = [name for name in args.servers.split(",") if name not in KINDS or name in ("attached", "remote")]
    if unknown:
        parser.error(f"--servers: unknown server {', '.join(unknown)}")
    subreaper()
    rng = random.Random(args.seed)
    servers = servers_here(args.servers.split(","))
    baseline = machine_state()
    outcomes: list[Outcome] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="soak-") as scratch:
        for i in range(1, args.iterations + 1):
            case = pick(rng, servers)
            outcome = run_case(case, os.path.join(scratch, str(i)))
            outcomes.append(outcome)
            problems = outcome.left + outcome.unexpected
            verdict = "; ".join(problems) if problems else "ok"
            if outcome.meanwhile:
                verdict += f" (machine-wide meanwhile: {'; '.join(outcome.meanwhile)})"
            sent = "" if outcome.landed else " (ended first)"
            print(f"{i:3} {case.label()}{sent} -> {outcome.status} in {outcome.wall_s:.1f} s: {verdict}", flush=True)
    # Left behind for good: a machine-wide change still there at the end (others' tests undo theirs).
    changed = until(lambda: changes(baseline, machine_state()), GRACE_S)
    print("\n".join(summary(outcomes, args.seed, time.monotonic() - started, changed)))
    failed = changed or any(o.left for o in outcomes) or (args.strict and any(o.unexpected for o in outcomes))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
