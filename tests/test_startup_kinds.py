"""Which server kinds and accept modes a command imports (issue 30, part 2): both registries name each entry and
where it is (servers/registry.py KINDS, servers/modes MODES, made by servers/lazy.py), and a module is imported when
its kind or mode is first asked for. A run of the built-in epoll workers imports epoll's module alone, none of the
launched kinds', nor the two kinds that find a running server (attached, remote). Read from the modules the process
holds at its exit, not from a timing, so a registry that goes back to importing every kind fails on any machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "accept-order-python"
# Runs the command's own script and writes, at its exit, the package's modules it holds.
PROBE = """
import atexit, runpy, sys
out = sys.argv[1]
ours = lambda: sorted(m for m in sys.modules if m.startswith("accept_order"))
atexit.register(lambda: open(out, "w").write("\\n".join(ours())))
sys.argv = ["accept-order", *sys.argv[2:]]
runpy.run_path(SCRIPT, run_name="__main__")
"""
MODES = "accept_order.servers.modes"
LAUNCHED = "accept_order.servers.launched"
# The kinds a run of the built-in workers does not use
OTHER_KINDS = (LAUNCHED, "accept_order.servers.attached", "accept_order.servers.remote")


def imported_by(args: list[str], tmp_path: Path, status: int = 0, said: str = "") -> list[str]:
    """The package's modules `accept-order ARGS` held when it exited with `status` (and `said` on stderr)."""
    out = tmp_path / "modules.txt"
    argv = [sys.executable, "-c", PROBE.replace("SCRIPT", repr(str(SCRIPT))), str(out), *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == status and said in done.stderr, done.stderr
    return out.read_text().split()


def loaded(modules: list[str], *names: str) -> list[str]:
    """Those of `names` (a package stands for its modules) that are among `modules`."""
    return [m for m in modules if any(m == name or m.startswith(name + ".") for name in names)]


@pytest.mark.skipif(sys.platform != "linux", reason="the built-in workers' modes are Linux's")
def test_a_run_imports_its_own_mode_and_no_other_kind(tmp_path: Path) -> None:
    modules = imported_by(["run", "--mode", "epoll", "-n", "2"], tmp_path)
    assert "accept_order.servers.pool" in modules  # it started the built-in workers: the probe saw the run
    assert loaded(modules, *OTHER_KINDS) == []
    # epoll's module (readiness.py: epoll, epoll-herd, poll, select) and what every mode is made of
    assert loaded(modules, MODES) == [MODES, f"{MODES}.base", f"{MODES}.readiness"]


def test_the_help_imports_no_kind_and_no_mode(tmp_path: Path) -> None:
    """--help lists every kind's name and every kind's own options (--maxconn) with none of their modules."""
    modules = imported_by(["run", "--help"], tmp_path)
    assert "accept_order.servers.registry" in modules  # the registry was read: the probe saw the options made
    assert loaded(modules, *OTHER_KINDS, MODES, "accept_order.servers.builtin") == []


def test_every_commands_help_imports_the_modes_names_alone(tmp_path: Path) -> None:
    """`--help` imports every command's module, reload's among them, whose options are the built-in kind's alone:
    that kind is imported, and the registry of its modes, but no mode's module (base.py makes sockets)."""
    modules = imported_by(["--help"], tmp_path)
    assert "accept_order.servers.builtin" in modules  # reload's options were made: the probe saw them
    assert loaded(modules, *OTHER_KINDS) == []
    assert loaded(modules, MODES) == [MODES]


def test_a_launched_kind_named_is_the_one_imported(tmp_path: Path) -> None:
    """--server nginx, checked (and refused: --maxconn is HAProxy's) before anything starts: nginx's module, and no
    other launched kind's, HAProxy's among them, whose option --maxconn is."""
    args = ["run", "--server", "nginx", "--mode", "reuseport", "--maxconn", "5"]
    modules = imported_by(args, tmp_path, status=2, said="--maxconn is HAProxy's")
    kinds = {m.split(".")[3].split("_")[0] for m in loaded(modules, LAUNCHED) if m != LAUNCHED}
    assert kinds <= {"nginx", "base", "directories", "installed"} and "nginx" in kinds, kinds


def test_the_lazy_registries_name_what_their_modules_define() -> None:
    """Each name the registries hold without importing is the one its kind or mode gives itself; the launched
    kinds are those that say they are launched; every mode's name is its own folding (cli/types.py canonical_mode
    answers a built-in mode from the built-in kind alone); the options every kind reads, which --help lists before
    any kind is imported (core/kind_options.py DECLARED), are the kinds' own, each once, in the registry's order."""
    from accept_order.core.kind_options import DECLARED
    from accept_order.servers.modes import MODES as BUILT_IN
    from accept_order.servers.registry import KINDS, LAUNCHED, all_mode_names

    assert [mode.name for mode in BUILT_IN.values()] == list(BUILT_IN)
    assert [kind.name for kind in KINDS.values()] == list(KINDS)
    assert [name for name, kind in KINDS.items() if kind.launched] == list(LAUNCHED)
    assert all(mode == mode.strip().casefold().replace("_", "-") for mode in all_mode_names())
    every: dict[str, object] = {}
    for kind in KINDS.values():
        for option in kind.options:
            every.setdefault(option.field, option)
    assert list(every.values()) == list(DECLARED)


def test_a_kind_or_mode_is_made_once_and_an_unknown_name_is_a_key_error() -> None:
    from accept_order.servers.lazy import Made

    made: list[str] = []
    registry: Made[list[str]] = Made(__name__, {"a": lambda: made.append("a") or made, "b": "os:getcwd"})
    assert list(registry) == ["a", "b"] and "a" in registry and "c" not in registry and made == []
    assert registry["a"] is registry["a"] and made == ["a"]
    with pytest.raises(KeyError):
        registry["c"]


def test_show_checks_a_files_mode_by_its_name(tmp_path: Path) -> None:
    """A run file's server and mode are checked against the registries' names: a mode this version has is read
    without its module (the built-in modes' make sockets), one it does not have is refused in one line."""
    import json

    golden = Path(__file__).resolve().parent / "data" / "golden" / "run.json"
    document = json.loads(golden.read_text())
    assert document["server"]["mode"] == "blocking"
    modules = imported_by(["show", str(golden)], tmp_path)
    assert "accept_order.experiments.order.result" in modules  # it read the file: the probe saw the command
    assert loaded(modules, *OTHER_KINDS, f"{MODES}.base", f"{MODES}.blocking") == []
    document["server"]["mode"] = "thunder-lock"  # uWSGI's, not the built-in workers'
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps(document))
    said = "server.mode: names mode 'thunder-lock', which builtin does not have in this version"
    imported_by(["show", str(unknown)], tmp_path, status=1, said=said)
