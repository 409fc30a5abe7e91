"""What the command line imports: `run --mode epoll` and `--help` load only what they use (issue 30 §2).

Start-up is most of a short run's time, and every test that starts the CLI as a process pays it, so each
command imports what it uses when it runs: the experiments of other commands, the file format of a run that
saves no file, the client hosts' and --observe-on's machinery, psutil where no launched or attached server
runs, rich where nothing is printed through it. Checked by the modules the process holds at its exit (its
`sys.modules`), not by timing: a module that comes back fails here on any machine, busy or not.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from accept_order.experiments import EXPERIMENTS

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "accept-order"
# Runs the command's own script (its signal latch first, as installed) and writes the names of the modules
# the process holds at exit, whatever its status, to the file named by the first argument, then whether the
# garbage collector runs and how many objects start-up froze (`gc:ENABLED:FROZEN`).
PROBE = """
import atexit, gc, runpy, sys
out = sys.argv[1]
atexit.register(
    lambda: open(out, "w").write("\\n".join([*sorted(sys.modules), f"gc:{gc.isenabled()}:{gc.get_freeze_count()}"]))
)
sys.argv = ["accept-order", *sys.argv[2:]]
runpy.run_path(SCRIPT, run_name="__main__")
"""
# Never needed to start 3 built-in workers, drive them, print the report and end, nor to print the help.
HEAVY = (
    "execnet",  # client hosts, --observe-on
    "matplotlib",  # pictures (plot)
    "rich.markdown",
    "psutil",  # launched and attached servers; the built-in pool reads /proc itself
    "secrets",  # a launched server's private directory (hashlib)
    "concurrent.futures",  # client hosts
    "accept_order.loads.hosts",
    "accept_order.experiments.observe",
    "accept_order.results.schema",  # the file format: only with --json, show, merge
    "accept_order.probes.fd_table",  # ctypes.util: an attached or launched server's fd tables
)
OTHERS = tuple(f"accept_order.experiments.{e.folder}" for e in EXPERIMENTS.values() if e.folder != "order")


def imported_by(args: list[str], tmp_path: Path) -> set[str]:
    """The modules `accept-order ARGS` held when it exited (which must be 0), and its `gc:...` line."""
    out = tmp_path / "modules.txt"
    code = PROBE.replace("SCRIPT", repr(str(SCRIPT)))
    done = subprocess.run(
        [sys.executable, "-c", code, str(out), *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(out.read_text().split())


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Those of `names` (a package stands for its modules) that are among `modules`."""
    return sorted(m for m in modules for name in names if m == name or m.startswith(name + "."))


@pytest.mark.skipif(sys.platform != "linux", reason="the built-in workers' modes are Linux's")
def test_a_run_imports_no_other_command_and_nothing_it_does_not_show(tmp_path: Path) -> None:
    modules = imported_by(["run", "--mode", "epoll", "-n", "2"], tmp_path)
    assert "accept_order.experiments.order.report" in modules  # it ran and reported: the probe saw the run
    assert loaded(modules, HEAVY) == []
    assert loaded(modules, OTHERS) == []


def test_start_up_is_frozen_and_the_command_runs_with_the_collector(tmp_path: Path) -> None:
    """The collector is held while the command line starts (cli.main) and runs again, start-up's objects
    frozen, once the command's module is imported: a run's body, its workers and a long load collect as ever."""
    gc_line = next(m for m in imported_by(["modes"], tmp_path) if m.startswith("gc:"))
    enabled, frozen = gc_line.split(":")[1:]
    assert enabled == "True"
    assert int(frozen) > 10_000  # the modules, classes and options start-up made


def test_the_help_imports_no_experiment_and_no_rich(tmp_path: Path) -> None:
    modules = imported_by(["--help"], tmp_path)
    assert "accept_order.cli.run" in modules  # every command's short help was read
    assert loaded(modules, (*HEAVY, "rich")) == []
    assert loaded(modules, ("accept_order.experiments.order", *OTHERS)) == []
