"""Shared fixtures and hooks: no test may leave a child process behind; ports, io_uring's absence, the golden files.

The autouse fixture `no_child_outlives_the_test` is the suite's guarantee that every worker, server and
subprocess a test starts has an owner that ends it. It waits a few seconds for children already on their
way out (a SIGTERMed worker writing its report), then kills and names any straggler and fails the test.

The helpers live in modules of their own (cli_runs, waiting, children, network, report_layout); the tests import
them from here, as they did when they were defined here.
"""

from __future__ import annotations

import gc
import os
import shutil
import signal
import socket
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

# Helpers the tests import from conftest, each defined in a module of its own
from children import KEPT_BY_FIXTURES, child_processes, cpu_of, describe, gone, has_children  # noqa: F401
from cli_runs import assert_one_error_line, run_cli, run_experiment  # noqa: F401
from host_namespace import back_in_the_host_namespace  # noqa: F401  (an autouse fixture: registered by its import)
from network import (  # noqa: F401
    http_fetch,
    http_fetch_many,
    ipv6_loopback_works,
    needs_ipv6,
    silent_port,  # a fixture: registered by its import, for every test
)
from report_layout import counted_calls, printed_like_the_report  # noqa: F401
from waiting import OutputReader, wait_for  # noqa: F401

from accept_order.loads.hosts import gateways

CHILD_GRACE_S = 3.0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--regen-golden",
        action="store_true",
        default=False,
        help="rewrite tests/data/golden/*.txt and *.csv from the saved results there (see tests/test_golden.py)",
    )


# pytest-xdist workers for the whole suite (pyproject's addopts say `-n auto`, which asks the hook below). The
# suite is mostly CPU (550-650 CPU-s), with waits on servers, signals and timeouts between: on 2 CPUs (2026-11-27,
# other sessions' work beside it) 2 workers took 463 s, 3 took 443 s, 4 took 654 s; with two CPU hogs beside it, 3
# took 489 s and 4 took 811 s. Each worker imports and collects the suite and warms its own caches (~50 CPU-s more
# for each worker beyond 2), which a third worker's waits still repay and a fourth's do not. Those runs were made
# while loadgroup did not group (pytest_collection_finish below): every worker also made the module fixtures of
# the files it ran. Grouping again, the suite took 478-485 CPU-s against 537 (busy runs, 3 workers); collecting
# the suite is ~4 CPU-s a worker.
SUITE_WORKERS = 3
# Fewer test files than this named on the command line run in one process: starting workers (each imports and
# collects what it runs) costs more than a file or two gains.
FILES_FOR_WORKERS = 3


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: SUITE_WORKERS for the suite or a folder, none for a file or two (PYTEST_XDIST_AUTO_NUM_WORKERS,
    as pytest-xdist reads it, overrides both)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "").isdigit():
        return int(os.environ["PYTEST_XDIST_AUTO_NUM_WORKERS"])
    named = [Path(arg.split("::")[0]) for arg in config.args]
    if not named or any(path.is_dir() for path in named):
        return SUITE_WORKERS
    files = {path.resolve() for path in named}
    return SUITE_WORKERS if len(files) >= FILES_FOR_WORKERS else 0


# The garbage collector in the test processes: a young collection every 10,000 allocations instead of 700. The
# in-process tests (show, plot, the fuzzing of result files) allocate much and keep little, and the default's ~5,000
# collections a file, each full one over matplotlib's, rich's and pytest's objects, were 7-8% of their CPU here
# (4.4-4.9 s of 55-65 s in test_fuzz_files, test_plot, test_plot_layout and the like; 1.8-1.9 s with this, peak
# memory +3%). A process forked from a test (built-in servers and workers) gets the interpreter's defaults back:
# it runs as it would under the command line.
#
# And the test process's objects are frozen across each fork it makes (gc.freeze: moved to the permanent
# generation, which no collection walks; gc.unfreeze puts them back in the parent right after), as the command
# line freezes what its start-up made before it forks its workers (cli/app.py started), which a run in this
# process (run_cli) never does. Without it a forked child's collections walked every object it inherited
# (pytest's, the package's, matplotlib's, rich's: 95,186 in a one-test process that imported those, more in a
# worker that collected the suite), and a walk writes each object's header: page after page of the parent copied
# into a child that never needed them. Fork-heavy files, -n 0, user + sys CPU of the run and
# its children, runs alternated without and with it (load 10-20 on 2 vCPUs): test_latency, test_kept_commands,
# test_cures and test_repeat, median 11.62 -> 10.82 CPU-s (6 pairs, 5 lower) and 11.08 -> 10.38 (5 pairs, all
# lower, this form); test_modes_order, test_signal_order, test_io_uring_model_first, test_faults,
# test_stop_keeps_finished_modes and test_uring_loop 14.10 -> 11.98 (6 pairs, all lower). Only the test process
# freezes and thaws (its pid): a child that forks again (a run's supervisor and its workers) keeps what it
# inherited frozen, and collects what it makes itself as under the command line.
# Its cost is memory in the test process: gc.freeze takes the young generations too and gc.unfreeze puts them all
# back into the oldest, which only a full collection walks, so the young garbage at each fork waits for one (and
# the freeze restarts the counts toward the next collections). 11 fork-heavy files in one process (512 forks,
# 2 pairs, load 3-6): with it 91,000-95,000 objects of garbage left at the end, no full collection on its own and
# a peak RSS (ru_maxrss) of 156 MiB; without it 35,000-40,000, one, and 143-150 MiB.
TEST_GC_THRESHOLDS = (10_000, 10, 10)


def _collector_for_tests() -> None:
    # Once per process, even where conftest is imported twice (as a plugin and as `conftest`): a second import
    # must neither take the raised thresholds for the defaults nor register a second fork hook, so the
    # defaults are kept on the gc module itself, which both imports share.
    if hasattr(gc, "_accept_order_defaults"):
        return
    defaults = gc.get_threshold()
    gc._accept_order_defaults = defaults  # type: ignore[attr-defined]
    gc.set_threshold(*TEST_GC_THRESHOLDS)
    test_process = os.getpid()

    def freeze() -> None:
        if os.getpid() == test_process:
            gc.freeze()

    def thaw() -> None:
        if os.getpid() == test_process:
            gc.unfreeze()

    os.register_at_fork(before=freeze, after_in_parent=thaw, after_in_child=lambda: gc.set_threshold(*defaults))


_collector_for_tests()


def _signals_as_a_terminal_gives_them() -> None:
    """SIGINT and SIGHUP as a command started from a terminal gets them, for every process the tests start: the
    signal tests send them to the command and expect its own handling. A suite started with either ignored (under
    nohup, or as a background job of a script, whose shell ignores SIGINT) passed that on to every command it ran,
    which then ignored the signal (12 tests failed so, 2026-11-28). A handler that does nothing keeps this process
    as it was started (a hang-up or a Ctrl-C still does not end it), and is reset to the default in whatever it
    executes, as an ignored signal is not."""
    for signum in (signal.SIGINT, signal.SIGHUP):
        try:
            if signal.getsignal(signum) == signal.SIG_IGN:
                signal.signal(signum, lambda *_: None)
        except ValueError:  # not the main thread: the signals stay as they are
            pass


_signals_as_a_terminal_gives_them()

_UNMOUNT_TRACEFS = pytest.StashKey[bool]()  # this session mounted tracefs (pytest_configure)


def pytest_configure(config: pytest.Config) -> None:
    """Workers at once: tracefs stays mounted for the whole session (the machine is left as it was at the end).
    A run that finds tracefs missing mounts it and unmounts it when it ends, under another worker's run that
    found it mounted and is about to start bpftrace on it."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", 0) or not shutil.which("bpftrace"):
        return
    from accept_order.probes import accepts

    if accepts.ensure_tracefs()[1] == accepts.MOUNTED:
        config.stash[_UNMOUNT_TRACEFS] = True


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.stash.get(_UNMOUNT_TRACEFS, False):
        from accept_order.probes import accepts

        accepts.unmount_tracefs()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`--dist loadgroup`, pyproject's addopts), the tests of a file that share a module-scoped
    fixture (a cluster of namespaces, a server, results made once) run on one worker, so that it is made once, not
    once per worker; every other test goes wherever a worker is free. Tests that must not overlap with some others
    (host-wide state) carry their own `xdist_group` mark, which this leaves alone.
    First of this hook's implementations: pytest-xdist's reads the marks (its worker registers after this file, so
    without tryfirst it ran first and never saw the marks added here)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        info = getattr(item, "_fixtureinfo", None)
        definitions = info.name2fixturedefs.values() if info is not None else ()
        if any(d.scope in ("module", "class") for defs in definitions for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


def xdist_group_of(item: pytest.Item) -> str | None:
    """The group pytest-xdist's loadgroup gives an item: its xdist_group marks' names, sorted and joined."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names)) if names else None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """A worker of `--dist loadgroup` tells the scheduler an item's group by a suffix of its node id
    ('...::test@group'), which pytest-xdist (3.8) writes into `item._nodeid`; pytest 9.2 reads node ids from a
    structured `_id` instead, so the suffix was lost and every group's tests were spread over all workers (each
    worker made the module fixtures again; pytest-xdist issue #1386). Where the suffix is missing, it is written
    there, before the worker sends its collection (pytest-xdist's own collection_finish)."""
    if not getattr(session.config.option, "loadgroup", False):  # set in pytest-xdist's workers only
        return
    for item in session.items:
        group = xdist_group_of(item)
        if group is None or item.nodeid.endswith(f"@{group}"):
            continue
        from _pytest.nodeid import NodeId  # pytest >= 9.2: where the suffix did not take

        item._id = NodeId.parse(f"{item.nodeid}@{group}")


@pytest.fixture
def regen_golden(request: pytest.FixtureRequest) -> bool:
    """--regen-golden was given: golden tests write what they render instead of comparing."""
    return bool(request.config.getoption("--regen-golden"))


@pytest.fixture(autouse=True)
def sources_read_as_a_new_command_would() -> None:
    """Each test's client hosts are compared with this checkout as it is now, as a command started now would read it:
    gateways.own_sources is read once a process, and a pytest worker runs many commands over minutes. Read by an
    earlier test, before another change to core/ or loads/ in a shared checkout, it refused every later client host
    (a popen of this checkout, read fresh) as 'from other sources than this one's (loads/ differ ...)', before a
    ramp's first step: no step measured, no file (the suite at load 4-7, twice)."""
    gateways.own_sources.cache_clear()


@pytest.fixture(autouse=True)
def no_child_outlives_the_test() -> Iterator[None]:
    yield
    if not has_children():
        return
    children = [p for p in psutil.Process().children(recursive=True) if p.pid not in KEPT_BY_FIXTURES]
    if not children:
        return
    # wait_procs also reaps our own direct children, zombies included: a zombie has ended.
    _, alive = psutil.wait_procs(children, timeout=CHILD_GRACE_S)
    if not alive:
        return
    names = [describe(p) for p in alive]
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=CHILD_GRACE_S)
    pytest.fail(f"{len(names)} child process(es) outlived the test: {'; '.join(names)}", pytrace=False)


@pytest.fixture
def no_uring(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process as if the io_uring binding were not installed (the probe's cache cleared before and after):
    the load generator's auto then runs epoll, and io_uring asked for is refused."""
    from accept_order.loads import drivers

    def missing() -> object:
        raise ImportError("No module named 'uring_api'")

    drivers.uring_unavailable.cache_clear()
    monkeypatch.setattr(drivers, "binding", missing)
    yield
    drivers.uring_unavailable.cache_clear()


@pytest.fixture
def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel picked it for a socket we closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def unlistened_port() -> Iterator[int]:
    """A TCP port on 127.0.0.1 where nothing listens for the whole test: bound by a socket of ours that never
    listens (a connection there is refused), so no other test's server can take it meanwhile, as one could take
    a free_port between the moment it was free and the connection."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])
