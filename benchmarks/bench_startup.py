"""The command line's start-up counted in instructions (callgrind), part by part: a count that does not move with
the machine's load, so that two sessions on a busy machine can compare what wall time cannot (issue 30 §2).

For each command (`run --mode epoll`, `--help`, `show FILE` of a run's file) it counts, each in a process of its
own under `valgrind --tool=callgrind` (the command's own process; the workers `run` forks are not counted):
  interpreter       `python -c pass`
  libraries         a bare interpreter importing the modules the command imports that are not accept-order's
                    (listed from one run under `-X importtime`), minus the interpreter
  our imports       the same interpreter importing every module the command imports, ours too, minus the above
  the command       the command itself, minus all its imports: parsing, the run, the report, the exit
and the whole. `--modules` adds, for the command's own modules, an importtime map: each of our modules' share of
our imports' self time (a map of where to look; the counts above are the truth).

Run: .venv/bin/python benchmarks/bench_startup.py [--only run|help|show] [--modules N]
Each count takes 5-30 s under callgrind; the whole benchmark about two minutes.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "experiments"))  # the one-line parser the experiments use

from _cli import OneLineParser  # noqa: E402  (experiments/_cli.py)
from _run_common import machine_line  # noqa: E402

SCRIPT = HERE.parent / "scripts" / "accept-order-python"  # the command as installed (its signal latch first)
PACKAGE = "accept_order"


def plain_env() -> dict[str, str]:
    """The environment an ordinary install runs in: byte code cached (a module compiled from source costs
    several times its import), output not forced unbuffered."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")}
    # one hash seed for every count: a random one moves --help's count by +-0.2 M (330.6-331.0 M in three runs),
    # as much as some cuts compared with it
    env["PYTHONHASHSEED"] = "0"
    return env


def instructions(argv: list[str], directory: Path) -> int:
    """Instructions the process started by `argv` executed (user space, as callgrind counts), its own only."""
    out = directory / "callgrind.out.%p"
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=plain_env(),
        start_new_session=True,  # the command's forked workers with it, so that a stop ends them all
    )
    try:
        _, stderr = proc.communicate(timeout=600)
    except BaseException:  # a timeout or Ctrl-C: valgrind and the command's workers are not left running
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    if proc.returncode != 0:
        last = [line for line in stderr.splitlines() if line.strip() and not line.startswith("==")][-1:] or [""]
        raise SystemExit(
            f"bench_startup: {' '.join(argv[:4])} ... failed under callgrind (exit {proc.returncode}): {last[0]}"
        )
    # valgrind execs the command in its own process: the first pid's line is the command's, later ones forks
    found = re.search(rf"=={proc.pid}== Collected : (\d+)", stderr)
    if found is None:
        raise SystemExit(f"bench_startup: no count from callgrind for {' '.join(argv[:4])} ...")
    for leftover in directory.glob("callgrind.out.*"):
        leftover.unlink()
    return int(found.group(1))


def imported(argv: list[str]) -> list[tuple[str, int]]:
    """(module, self microseconds) of every module the command imports, in the order their imports complete."""
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=plain_env(), check=True,
    )  # fmt: skip
    rows = []
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, own, name = line.split("|")
            if own.strip().isdigit():
                rows.append((name.strip(), int(own)))
    return rows


def importer(modules: list[str]) -> list[str]:
    """An interpreter that imports these modules and nothing else (one that will not import on its own, a
    module a package loads only from inside itself, is skipped)."""
    body = f"import importlib\nfor name in {modules!r}:\n try: importlib.import_module(name)\n except Exception: pass"
    return [sys.executable, "-c", body]


def ours(name: str) -> bool:
    return name == PACKAGE or name.startswith(PACKAGE + ".")


def count_command(label: str, args: list[str], directory: Path, interpreter: int, modules: int) -> None:
    argv = [sys.executable, str(SCRIPT), *args]
    subprocess.run(argv, env=plain_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)  # pycs
    rows = imported(argv)
    names = [name for name, _ in rows if name not in ("__main__",)]
    libraries = instructions(importer([n for n in names if not ours(n)]), directory)
    every = instructions(importer(names), directory)
    whole = instructions(argv, directory)
    mega = 1e6
    parts = [
        ("interpreter", interpreter),
        (f"libraries ({sum(not ours(n) for n in names)} modules)", libraries - interpreter),
        (f"our imports ({sum(ours(n) for n in names)} modules)", every - libraries),
        ("the command (parse, work, report, exit)", whole - every),
    ]
    print(f"== accept-order {' '.join(args)}: {whole / mega:.0f} M instructions")
    for name, count in parts:
        print(f"  {name:42} {count / mega:7.1f} M  {count / whole:4.0%}")
    if modules:
        own = [(n, us) for n, us in rows if ours(n)]
        total = sum(us for _, us in own) or 1
        print(f"  our imports by self time (-X importtime, one run; {modules} largest):")
        for name, us in sorted(own, key=lambda row: -row[1])[:modules]:
            print(f"    {name:58} {us / total:4.0%}  ~{(every - libraries) * us / total / mega:5.1f} M")


def run_file(directory: Path) -> Path:
    """A run's result file for `show` to read."""
    saved = directory / "run.json"
    subprocess.run(
        [sys.executable, str(SCRIPT), "run", "--mode", "epoll", "--json", str(saved)],
        env=plain_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
    )  # fmt: skip
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="bench_startup.py", description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", choices=("run", "help", "show"), help="one command only")
    parser.add_argument("--modules", type=int, default=0, metavar="N", help="map our N costliest modules")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("bench_startup: valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 1
    print(machine_line() + " (instructions do not move with the load)")
    with TemporaryDirectory(prefix="bench-startup-") as name:
        directory = Path(name)
        interpreter = instructions([sys.executable, "-c", "pass"], directory)
        print(f"python -c pass: {interpreter / 1e6:.1f} M instructions")
        commands = {
            "run": ["run", "--mode", "epoll"],
            "help": ["--help"],
            "show": ["show", str(run_file(directory))] if args.only in (None, "show") else [],
        }
        for key, command in commands.items():
            if args.only in (None, key):
                count_command(key, command, directory, interpreter, args.modules)
    return 0


if __name__ == "__main__":
    sys.exit(main())
