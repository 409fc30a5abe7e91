"""What the command line imports: `run --mode epoll`, `--help`, `show` and `inspect` load only what they use
(issue 30 §2).

Start-up is most of a short run's time, and every test that starts the CLI as a process pays it, so each
command imports what it uses when it runs: the experiments of other commands, the file format of a run that
saves no file, the client hosts' and --observe-on's machinery, psutil where no launched or attached server
runs, rich where nothing is printed through it; the kinds' and modes' machinery (a kind's or a mode's module
is imported when it is first asked for), and the dataclasses a command does not use (Python 3.11 compiles the
source of each one's methods: ~1.5 ms a class, the largest part of our own modules' start-up). Checked by the
modules the process holds at its exit (its `sys.modules`), not by timing: a module that comes back fails here
on any machine, busy or not.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from accept_order.experiments import EXPERIMENTS

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "accept-order-python"
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
# A kind's or a mode's machinery, imported where a server of theirs is made (its declarations where the kind or
# mode is first asked for): none of it is the built-in epoll workers'.
MACHINERY = (
    "accept_order.servers.attached_owners",
    "accept_order.servers.remote_learned",
    "accept_order.servers.launched.haproxy_threads",
    "accept_order.servers.modes.accept_mutex_lock",
    "accept_order.servers.modes.fd_pass_acceptor",
    "accept_order.loads.reply_keys",  # a server elsewhere's replies
)
# Dataclasses a run neither makes nor reads: a concurrent load's drivers and client hosts, the herd table,
# kept connections' counts, serve's and compare's results, a warning no loopback run has.
NOT_A_RUNS = (
    "accept_order.core.concurrent_load",  # a concurrent load's spec, and its client hosts'
    "accept_order.core.hosts",
    "accept_order.core.driver_stats",
    "accept_order.core.host_outcome",
    "accept_order.core.run_warnings",
    "accept_order.core.cures",  # what changes a kind's long-lived split: inspect's report reads the kinds' cures
    "accept_order.analysis.herd",
    "accept_order.analysis.kept_counts",
    "accept_order.probes.proc_waits",  # a launched server's threads' waits (and inspect's)
    "accept_order.experiments.order.serve_result",
    "accept_order.experiments.order.compare_result",
)
STARTS_PROCESSES = ("multiprocessing", "subprocess")  # what only a command that starts a process needs
GOLDEN_RUN = Path(__file__).resolve().parent / "data" / "golden" / "run.json"


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
    assert loaded(modules, (*MACHINERY, *NOT_A_RUNS)) == []
    assert "ipaddress" not in modules  # the default --host and netlink's IPv4 addresses are spelled already
    assert "rich.table" not in modules  # its tables are render/simple_table.py's, printed without rich's Table


def test_an_address_spelled_without_ipaddress_is_spelled_as_ipaddress_spells_it() -> None:
    """normal_address and resolve_host answer an IPv4 address as ipaddress does (a run of the default --host
    imports no ipaddress): what is not canonical dotted-quad goes through ipaddress as before."""
    import ipaddress
    import random

    from accept_order.core.addresses import LOOPBACK, resolve_host
    from accept_order.probes.listeners import normal_address

    def spelled(text: str) -> str:
        try:
            return str(ipaddress.ip_address(text))
        except ValueError:
            return text

    parts = ["0", "1", "01", "00", "9", "255", "256", "1000", "", " 1", "+1", "-1", "\u0661", "a"]
    rnd = random.Random(30)
    cases = [".".join(rnd.choice(parts) for _ in range(rnd.choice((3, 4, 5)))) for _ in range(5000)]
    cases += ["127.0.0.1", "0.0.0.0", "::", "::1", "0:0::0", "::ffff:127.0.0.1", "localhost", "1.2.3.4 "]
    assert [normal_address(c) for c in cases] == [spelled(c) for c in cases]
    assert resolve_host(LOOPBACK) == (str(ipaddress.ip_address(LOOPBACK)), None)


def test_start_up_is_frozen_and_the_command_runs_with_the_collector(tmp_path: Path) -> None:
    """The collector is held while the command line starts (cli.main) and runs again, start-up's objects
    frozen, once the command's module is imported: a run's body, its workers and a long load collect as ever."""
    gc_line = next(m for m in imported_by(["modes"], tmp_path) if m.startswith("gc:"))
    enabled, frozen = gc_line.split(":")[1:]
    assert enabled == "True"
    assert int(frozen) > 10_000  # the modules, classes and options start-up made


# Runs the command's own script and writes, at exit, how many collections ran while it started (from the package's
# first import until its command's module was imported) and how many after.
COLLECTIONS = """
import atexit, gc, runpy, sys
out = sys.argv[1]
counts = {"starting": 0, "running": 0}

def count(phase, info):
    if phase == "start" and "accept_order" in sys.modules:
        counts["running" if "accept_order.cli.run" in sys.modules else "starting"] += 1

gc.callbacks.append(count)
atexit.register(lambda: open(out, "w").write(f"{counts['starting']} {counts['running']}"))
sys.argv = ["accept-order", *sys.argv[2:]]
runpy.run_path(SCRIPT, run_name="__main__")
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the built-in workers' modes are Linux's")
def test_no_collection_while_the_command_starts(tmp_path: Path) -> None:
    """The collector is held from the script's first statements (not from cli.main, after the package's imports),
    and runs in the command's body: a run's imports and its work there are collected as ever."""
    out = tmp_path / "collections.txt"
    code = COLLECTIONS.replace("SCRIPT", repr(str(SCRIPT)))
    done = subprocess.run(
        [sys.executable, "-c", code, str(out), "run", "--mode", "epoll", "-n", "2"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    starting, running = map(int, out.read_text().split())
    assert (starting, running > 0) == (0, True)


def test_a_commands_own_imports_are_held_and_frozen_as_start_ups() -> None:
    """modules_held (cli/app.py): in the command line's process (start-up frozen), what a command's body imports is
    made with the collector held, then frozen and the collector back on; elsewhere (a test's CliRunner, an API
    caller: nothing frozen) the collector is left as it is and nothing is frozen."""
    import gc

    from accept_order.cli import app

    def imports() -> tuple[bool, int, list[list[int]]]:
        """(collector on inside, freeze count inside, what was made there: 1,000 containers)"""
        with app.modules_held():
            inside = (gc.isenabled(), gc.get_freeze_count())
            made = [[] for _ in range(1000)]
        return (*inside, made)

    assert gc.isenabled() and not app._FROZEN
    enabled, frozen, _ = imports()
    assert enabled and gc.isenabled() and gc.get_freeze_count() < frozen + 500  # never held: as it is
    gc.disable()  # as cli.main holds it
    try:
        app.started()
        assert gc.isenabled() and app._FROZEN
        enabled, frozen, made = imports()
        assert not enabled and gc.isenabled()
        assert gc.get_freeze_count() >= frozen + 1000  # what was made inside is frozen
    finally:
        gc.unfreeze()
        gc.enable()
        app._FROZEN.clear()


def test_the_help_imports_no_experiment_and_no_rich(tmp_path: Path) -> None:
    modules = imported_by(["--help"], tmp_path)
    assert "accept_order.cli.run" in modules  # every command's short help was read
    assert loaded(modules, (*HEAVY, "rich")) == []
    assert loaded(modules, ("accept_order.experiments.order", *OTHERS)) == []
    assert loaded(modules, (*MACHINERY, *NOT_A_RUNS, *STARTS_PROCESSES, "tempfile", "ipaddress")) == []
    # what a run measures, and the probes that read it: no worker's counters, no listener, no reply is read here
    assert loaded(modules, ("accept_order.core.measures", "accept_order.core.target", "accept_order.probes")) == []


def test_show_of_a_run_file_imports_no_other_result_and_starts_nothing(tmp_path: Path) -> None:
    modules = imported_by(["show", str(GOLDEN_RUN)], tmp_path)
    assert "accept_order.experiments.order.result" in modules  # it read the file: the probe saw the command
    assert loaded(modules, (*MACHINERY, *STARTS_PROCESSES, "execnet", "matplotlib", "psutil")) == []
    assert loaded(modules, OTHERS) == []
    others = ("serve_result", "compare_result", "serve_experiment", "compare_experiment", "api")
    assert loaded(modules, tuple(f"accept_order.experiments.order.{name}" for name in others)) == []
    assert loaded(modules, ("accept_order.servers.pool", "accept_order.servers.worker")) == []


# What a result file is checked against, and its CSV tables: read where a file is loaded or exported, never where
# one is saved (a dozen dataclasses: Python 3.11 compiles each one's methods).
FILE_CHECKS = (
    "accept_order.results.schema",
    "accept_order.results.shapes",
    "accept_order.results.host_shapes",
    "accept_order.results.evidence_shapes",
    "accept_order.results.export",
)


@pytest.mark.skipif(sys.platform != "linux", reason="the built-in workers' modes are Linux's")
def test_a_run_saving_its_file_imports_no_schema_and_no_tables(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    modules = imported_by(["run", "--mode", "epoll", "-n", "2", "--json", str(saved)], tmp_path)
    assert saved.exists() and "accept_order.results.envelope" in modules  # it saved through the envelope
    assert loaded(modules, FILE_CHECKS) == []


@pytest.mark.skipif(sys.platform != "linux", reason="inspect reads Linux's /proc")
def test_inspect_imports_neither_the_file_format_nor_what_starts_servers(tmp_path: Path) -> None:
    """inspect of a listener (this test's own socket) saves no file unless asked: the file format's schema
    (a dozen dataclasses) is not imported, nor the built-in workers' machinery, nor another experiment."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        modules = imported_by(["inspect", "--port", str(listener.getsockname()[1])], tmp_path)
    assert "accept_order.experiments.inspect.report" in modules  # it looked and reported
    reads = ("accept_order.probes.fd_table",)  # the processes' fd tables are what inspect reads
    assert loaded(modules, (*(h for h in HEAVY if h not in reads), *MACHINERY, *STARTS_PROCESSES)) == []
    assert loaded(modules, ("accept_order.results.schema", "accept_order.results.typed")) == []
    assert loaded(modules, ("accept_order.servers.pool", "accept_order.experiments.order")) == []
    assert loaded(modules, tuple(o for o in OTHERS if not o.endswith(".inspect"))) == []


@pytest.mark.skipif(sys.platform != "linux", reason="inspect reads Linux's /proc")
def test_inspect_saving_its_file_imports_no_schema_and_no_tables(tmp_path: Path) -> None:
    saved = tmp_path / "inspect.json"
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = str(listener.getsockname()[1])
        modules = imported_by(["inspect", "--port", port, "--json", str(saved)], tmp_path)
    assert saved.exists() and "accept_order.experiments.inspect.experiment" in modules  # saved by its experiment
    assert loaded(modules, FILE_CHECKS) == []
