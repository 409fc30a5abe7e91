"""What `accept-order inspect` costs on a hand-started nginx (issue 30: `inspect --port` of a 64-worker nginx
under 0.5 s, and at most 1.5x the 4-worker time; the time for 256 workers said).

nginx is started by this script from a config of its own (W workers, the default epoll events, keep-alive
for 24 h, every worker room for all the held connections), in the foreground (`daemon off`), and stopped by
its pid at the end.

The targets (always): in each round, an idle nginx of each worker count in turn (the order rotating every
round), started for the round and stopped after it, so that no other nginx is on the machine while one is
inspected (inspect reads every process's fd table to find a listener's holders, and a 256-worker nginx has
about 66,000 descriptors); on each, `python -m accept_order inspect --port P --json F` end to end (the
interpreter, the imports, the reading, the report, the file): its wall time and its CPU (user + system,
RUSAGE_CHILDREN), and the reading alone (below). Printed: each worker count's medians (min-max) over the
rounds, the 64-worker command's wall time against 0.5 s and the median of the rounds' 64/4 ratios (each
round's two measured a few seconds apart) against 1.5, OK or MISS.

The detail (with --open N,... or --baseline SRC): --open N: held_connections.py holds N connections, each
answered once, for the whole run; ss counts them established before the rounds. Each round runs, in a child
process each:
- the command, as above (--by pid: the master's pid instead of --port, as observe asks);
- the reading: `inspect(port=P)` (or pid=) alone, timed inside the child (CPU and wall), with the
  readlink(2) calls and the fdinfo files it made counted (os.readlink and the opens of /proc/*/fdinfo/*
  wrapped).
--baseline SRC: the same again with PYTHONPATH=SRC (another checkout's src/, say `git archive HEAD src`),
the two alternating within each round so that the machine's drift falls on both; their reports (stdout)
and result files (without `environment`, which holds the time) are compared byte for byte, and any
difference is printed. Printed: each setting's medians (min-max) over the rounds, with the machine.

Run: .venv/bin/python benchmarks/bench_inspect.py [--workers 4,64,256] [--rounds 5] [--open 0,10000]
[--by port|pid] [--baseline /tmp/before/src]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))

from _cli import OneLineParser, positive_int  # noqa: E402  (experiments/_cli.py)
from bench_nginx_load import print_machine, terminated  # noqa: E402
from bench_observe_overhead import established  # noqa: E402
from held_connections import Held  # noqa: E402

from accept_order.core.waiting import wait_for  # noqa: E402

PROG = "bench_inspect.py"
START_TIMEOUT_S = 60.0
RUN_TIMEOUT_S = 300.0
TARGET_S = 0.5  # issue 30: inspect --port of a 64-worker nginx, end to end
IDLE_ROOM = 1000  # a worker's descriptors beyond its connections: 256 workers each hold a channel to every other
TARGET_RATIO = 1.5  # ... at most this many times the 4-worker time
CONFIG = """\
worker_processes {workers};
worker_rlimit_nofile {files};
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections {connections}; }}
http {{
    access_log off;
    keepalive_timeout 24h;
    keepalive_requests 1000000;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{ return 200 "ok\\n"; }}
    }}
}}
"""
# The reading alone, in a child: CPU and wall of inspect(), the readlinks and fdinfo opens it made.
READING = """
import builtins, json, os, sys, time
counts = {"readlink": 0, "fdinfo": 0}
real_readlink, real_open = os.readlink, builtins.open
def readlink(*a, **k):
    counts["readlink"] += 1
    return real_readlink(*a, **k)
real_os_open = os.open
def opened(file, *a, **k):
    if isinstance(file, str) and "/fdinfo/" in file:
        counts["fdinfo"] += 1
    return real_open(file, *a, **k)
def os_opened(file, *a, **k):
    if isinstance(file, str) and "/fdinfo/" in file:
        counts["fdinfo"] += 1
    return real_os_open(file, *a, **k)
os.readlink, builtins.open, os.open = readlink, opened, os_opened
from accept_order.experiments.inspect.run import inspect
cpu, wall = time.process_time(), time.perf_counter()
result = inspect(port=int(sys.argv[1])) if sys.argv[2] == "port" else inspect(pid=int(sys.argv[1]))
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(json.dumps({"cpu": cpu, "wall": wall, "mechanism": result.mechanism.name, **counts}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Nginx:
    """nginx with `workers` workers on a free port of 127.0.0.1, in the foreground; stopped by its pid."""

    def __init__(self, workers: int, room: int, directory: str) -> None:
        self.port = free_port()
        self.workers = workers
        conf = os.path.join(directory, "nginx.conf")
        with open(conf, "w") as f:
            f.write(
                CONFIG.format(workers=workers, files=room + 100, connections=room + 50, dir=directory, port=self.port)
            )
        self.proc = subprocess.Popen(
            ["nginx", "-c", conf, "-p", directory, "-g", "daemon off;"], stderr=subprocess.PIPE, text=True
        )

    def __enter__(self) -> Nginx:
        started = wait_for(lambda: len(_children(self.proc.pid)) == self.workers, START_TIMEOUT_S, 0.01)
        listening = started and wait_for(lambda: _listening(self.port), START_TIMEOUT_S, 0.01)
        if not (listening and wait_for(lambda: _settled(self.proc.pid), START_TIMEOUT_S, 0.01)):
            self.close()
            raise SystemExit(f"{PROG}: error: nginx did not start {self.workers} workers on port {self.port}")
        return self

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # fast shutdown
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _settled(pid: int) -> bool:
    """Every worker asleep in epoll_wait: done starting (a 256-worker nginx takes seconds to; a worker that
    is still setting up is read as running, and costs what a settled one does not)."""
    for child in _children(pid):
        try:
            if Path(f"/proc/{child}/wchan").read_text() not in ("do_epoll_wait", "ep_poll"):
                return False
        except OSError:
            return False
    return True


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _env(src: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an ordinary install runs: compiled once, not at every start
    if src is not None:
        env["PYTHONPATH"] = src
    else:
        env.pop("PYTHONPATH", None)
    return env


def command(target: list[str], src: str | None, directory: str, tag: str) -> tuple[float, float, str, dict[str, Any]]:
    """(wall s, CPU s, stdout, the result file without its environment) of one `inspect --port`; the CPU
    from RUSAGE_CHILDREN around it (subprocess reaps the child itself: its own rusage is not kept)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    path = os.path.join(directory, f"{tag}.json")
    began = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "accept_order", "inspect", *target, "--json", path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(src) | {"COLUMNS": "160"},
    )
    out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{PROG}: error: inspect exited {proc.returncode}: {err.decode()[-300:]!r}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(path) as f:
        document = json.load(f)
    document.pop("environment", None)
    document.get("result", {}).pop("environment", None)
    return wall, cpu, out.decode(), document


def reading(target: list[str], src: str | None) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", READING, target[-1], "port" if target[0] == "--port" else "pid"],
        capture_output=True,
        text=True,
        env=_env(src),
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{PROG}: error: the reading failed: {out.stderr.strip()[-300:]!r}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def measure(workers: int, count: int, args: argparse.Namespace) -> None:
    room = count + IDLE_ROOM
    with tempfile.TemporaryDirectory() as directory, Nginx(workers, room, directory) as nginx:
        held = Held("127.0.0.1", nginx.port, count) if count else None
        try:
            if held is not None:
                held.__enter__()
                seen = established(nginx.port)
                if seen < count:
                    raise SystemExit(f"{PROG}: error: ss counts {seen} established, not {count}")
            sources = {"after": None} if args.baseline is None else {"before": args.baseline, "after": None}
            figures: dict[str, dict[str, list[float]]] = {name: {} for name in sources}
            outputs: dict[str, tuple[str, dict[str, Any]]] = {}
            differ = False
            for round_ in range(args.rounds):
                order = list(sources.items())
                if round_ % 2:
                    order.reverse()
                for name, src in order:
                    target = ["--port", str(nginx.port)] if args.by == "port" else [str(nginx.proc.pid)]
                    wall, cpu, out, document = command(target, src, directory, name)
                    read = reading(target, src)
                    for key, value in (
                        ("command wall", wall),
                        ("command cpu", cpu),
                        ("reading wall", read["wall"]),
                        ("reading cpu", read["cpu"]),
                        ("readlinks", read["readlink"]),
                        ("fdinfo reads", read["fdinfo"]),
                    ):
                        figures[name].setdefault(key, []).append(value)
                    outputs[name] = (out, document)
                if len(outputs) == 2 and outputs["before"] != outputs["after"]:
                    differ = True
                    _say_difference(outputs)
            print(f"nginx {workers} workers, {count:,} held connections, inspect by {args.by}, {args.rounds} rounds:")
            for name, table in figures.items():
                said = ", ".join(f"{key} {_summary(values)}" for key, values in table.items())
                print(f"  {name}: {said}")
            if args.baseline is not None:
                print(f"  reports and result files: {'DIFFER' if differ else 'identical in every round'}")
        finally:
            if held is not None:
                held.close()


def targets(sizes: list[int], rounds: int) -> None:
    """Issue 30's figures: an idle nginx of each size in turn each round (see the module's docstring)."""
    figures: dict[str, dict[int, list[float]]] = {name: {w: [] for w in sizes} for name in FIGURES}
    for round_ in range(rounds):
        shift = round_ % len(sizes)
        for workers in sizes[shift:] + sizes[:shift]:
            with tempfile.TemporaryDirectory() as directory, Nginx(workers, IDLE_ROOM, directory) as nginx:
                target = ["--port", str(nginx.port)]
                wall, cpu, _, _ = command(target, None, directory, "targets")
                figures["command wall"][workers].append(wall)
                figures["command CPU"][workers].append(cpu)
                figures["reading CPU"][workers].append(reading(target, None)["cpu"])
    print(f"inspect --port of an idle nginx, started for each measurement, {rounds} rounds (sizes in turn):")
    for line in target_lines(figures):
        print(line)


FIGURES = ("command wall", "command CPU", "reading CPU")


def target_lines(figures: dict[str, dict[int, list[float]]]) -> list[str]:
    """Each size's medians (min-max), then the 64-worker command's wall time against TARGET_S and the median
    of the rounds' 64/4 ratios against TARGET_RATIO (the CPU's beside it), OK or MISS; n/a where a size
    was not measured."""
    walls, cpus = figures["command wall"], figures["command CPU"]
    lines = [
        f"  {workers} workers: " + ", ".join(f"{name} {_summary(figures[name][workers])} s" for name in FIGURES)
        for workers in walls
    ]
    if walls.get(64):
        wall = statistics.median(walls[64])
        lines.append(
            f"  64 workers, command wall (median): {wall:.3f} s, target < {TARGET_S} s: {_verdict(wall < TARGET_S)}"
        )
    else:
        lines.append(f"  64 workers, command wall: n/a (not measured), target < {TARGET_S} s")
    if walls.get(4) and walls.get(64):
        ratios = [big / small for big, small in zip(walls[64], walls[4], strict=True)]
        ratio = statistics.median(ratios)
        cpu = statistics.median(big / small for big, small in zip(cpus[64], cpus[4], strict=True))
        lines.append(
            f"  64/4 command wall ratio (median of the rounds'): {ratio:.2f} ({min(ratios):.2f}-{max(ratios):.2f}),"
            f" target <= {TARGET_RATIO}: {_verdict(ratio <= TARGET_RATIO)} (CPU ratio {cpu:.2f})"
        )
    else:
        lines.append(f"  64/4 command wall ratio: n/a (4 and 64 workers not both measured), target <= {TARGET_RATIO}")
    return lines


def _verdict(met: bool) -> str:
    return "OK" if met else "MISS"


def _say_difference(outputs: dict[str, tuple[str, dict[str, Any]]]) -> None:
    (out_a, doc_a), (out_b, doc_b) = outputs["before"], outputs["after"]
    if out_a != out_b:
        import difflib

        diff = difflib.unified_diff(out_a.splitlines(), out_b.splitlines(), "before", "after", lineterm="")
        print("\n".join(list(diff)[:40]))
    if doc_a != doc_b:
        print("result files differ:")
        print(json.dumps(doc_a, sort_keys=True)[:2000])
        print(json.dumps(doc_b, sort_keys=True)[:2000])


def main() -> int:
    parser = OneLineParser(prog=PROG, description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--workers", type=_sizes, default="4,64,256", help="nginx worker counts, comma-separated (default 4,64,256)"
    )
    parser.add_argument(
        "--open", type=_counts, help="held connection counts, comma-separated: the detail, for each worker count"
    )
    parser.add_argument("--rounds", type=positive_int, default=5)
    parser.add_argument("--by", choices=("port", "pid"), default="port", help="inspect --port P, or the master's pid")
    parser.add_argument("--baseline", help="another checkout's src/ to run beside this one, alternating")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, terminated)
    print_machine()
    if shutil.which("nginx") is None:
        print("nginx is not installed: nothing measured")
        return 0
    targets(args.workers, args.rounds)
    if args.open is None and args.baseline is None:
        return 0
    for workers in args.workers:
        for count in args.open or [0]:
            measure(workers, count, args)
    return 0


def _sizes(text: str) -> list[int]:
    """Worker counts: each at least 1."""
    sizes = _counts(text)
    if 0 in sizes:
        raise argparse.ArgumentTypeError(f"expected worker counts of at least 1, got {text!r}")
    return sizes


def _counts(text: str) -> list[int]:
    """`4,64,256` as numbers, each at least 1 (0 too for --open: no held connections)."""
    try:
        counts = [int(n) for n in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if any(n < 0 for n in counts):
        raise argparse.ArgumentTypeError(f"expected numbers of at least 0, got {text!r}")
    return counts


if __name__ == "__main__":
    sys.exit(main())
