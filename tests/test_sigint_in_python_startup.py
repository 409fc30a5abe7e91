"""A Ctrl-C during Python's own start-up, before any line of ours runs: one line and 130, never CPython's
"Fatal Python error: init_import_site" and its traceback.

The command is two scripts installed side by side (scripts/accept-order and scripts/accept-order-python): the
first starts the second with SIGINT blocked, whose first statements hold SIGINT and unblock it. Each test here
installs both as pip does (the launcher as it is, the Python part's `#!python` line naming the interpreter) into a
venv of its own, whose site-packages hold a hook that stops start-up at a chosen point of site's import (a .pth
file processed first or last, sitecustomize) until the test has sent its SIGINT: the moment is exact, no timing.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
TIMEOUT_S = 120.0  # a whole start-up and a run's end on a busy machine; never reached when the test passes

# Stops start-up at the point named by AO_STOP_AT: tells the test so on the pipe AO_READY_FD, then waits for the
# test's word on AO_GO_FD (both pipes the test passes; closed here once used). AO_MASK_FILE, if set, gets the
# blocked signals (/proc's SigBlk) at that point and again when the command imports accept_order.cli.
HOOK = """
import os, sys


def _sigblk():
    with open("/proc/self/status") as f:
        return next(line.split()[1] for line in f if line.startswith("SigBlk:"))


def _record(where):
    if os.environ.get("AO_MASK_FILE"):
        with open(os.environ["AO_MASK_FILE"], "a") as f:
            f.write(f"{where} {_sigblk()}\\n")


class _AtCli:
    def find_spec(self, name, path, target=None):
        if name == "accept_order.cli":
            _record("cli")
        return None


def stop(point):
    if os.environ.get("AO_STOP_AT") != point:
        return
    _record("site")
    sys.meta_path.insert(0, _AtCli())
    # once only: not in the Pythons the command starts (its reaper), which inherit its environment
    ready, go = int(os.environ.pop("AO_READY_FD")), int(os.environ.pop("AO_GO_FD"))
    del os.environ["AO_STOP_AT"]
    os.write(ready, str(os.getpid()).encode())
    os.close(ready)
    os.read(go, 1)
    os.close(go)
"""
POINTS = {
    "first .pth": "00-stop.pth",  # before the .pth that finds the package (10-paths.pth)
    "last .pth": "zz-stop.pth",
    "sitecustomize": "sitecustomize.py",  # site's last step
}
HELD = ["accept-order: error: interrupted while starting"]


@dataclass(frozen=True)
class Installed:
    bin: Path  # the launcher and its Python part, side by side

    @property
    def command(self) -> Path:
        return self.bin / "accept-order"


def install_scripts(bin_dir: Path, python: str) -> None:
    """The command's two scripts, as pip installs them."""
    launcher = bin_dir / "accept-order"
    launcher.write_bytes((SCRIPTS / "accept-order").read_bytes())
    part = (SCRIPTS / "accept-order-python").read_text().splitlines(keepends=True)
    assert part[0] == "#!python\n"  # what pip and installer rewrite: the whole line
    (bin_dir / "accept-order-python").write_text(f"#!{python}\n" + "".join(part[1:]))
    for script in (launcher, bin_dir / "accept-order-python"):
        script.chmod(0o755)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return make_venv(tmp_path_factory.mktemp("venv"))


def make_venv(venv: Path) -> Installed:
    """A venv whose site-packages find the package, hold the stopping hook, and the command installed."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=TIMEOUT_S)
    site_packages = Path(
        subprocess.run(
            [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
            timeout=TIMEOUT_S,
        ).stdout.strip()
    )
    # the package and its dependencies: this test's own environment (an editable install's .pth too)
    ours = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (site_packages / "10-paths.pth").write_text("".join(f"import site; site.addsitedir({path!r})\n" for path in ours))
    (site_packages / "_ao_stop.py").write_text(HOOK)
    for point, name in POINTS.items():
        (site_packages / name).write_text(f"import _ao_stop; _ao_stop.stop({point!r})\n")
    install_scripts(venv / "bin", str(venv / "bin" / "python"))
    return Installed(venv / "bin")


def _wait_ready(fd: int, proc: subprocess.Popen[str]) -> int:
    """The pid the hook wrote, once start-up has stopped at its point; an empty read is the command gone first."""
    readable, _, _ = select.select([fd], [], [], TIMEOUT_S)
    assert readable, "start-up never reached the hook"
    data = os.read(fd, 64)
    assert data, f"the command ended before the hook: status {proc.wait(TIMEOUT_S)}"
    return int(data)


@dataclass(frozen=True)
class Stopped:
    done: subprocess.CompletedProcess[str]
    started: int  # the pid the test started (the launcher's)
    stopped: int  # the pid of the Python that stopped at the hook


def run_stopped_at(installed: Installed, point: str, masks: Path | None = None) -> Stopped:
    """The command started, stopped at `point` of site's import, sent a SIGINT there, then let go."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    env = {**os.environ, "AO_STOP_AT": point, "AO_READY_FD": str(ready_w), "AO_GO_FD": str(go_r)}
    if masks is not None:
        env["AO_MASK_FILE"] = str(masks)
    proc = subprocess.Popen(
        [str(installed.command), "run", "--mode", "epoll"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        pass_fds=(ready_w, go_r),
    )
    os.close(ready_w)
    os.close(go_r)
    try:
        pid = _wait_ready(ready_r, proc)
        os.kill(proc.pid, signal.SIGINT)
        os.write(go_w, b"g")
    finally:
        os.close(ready_r)
        os.close(go_w)
        try:
            out, err = proc.communicate(timeout=TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return Stopped(subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid, pid)


@pytest.mark.parametrize("point", list(POINTS))
def test_a_sigint_inside_sites_import_is_one_line_and_130(installed: Installed, point: str) -> None:
    run = run_stopped_at(installed, point)
    assert run.done.stderr.splitlines() == HELD, run.done.stderr
    assert run.done.returncode == 130
    assert run.done.stdout == ""
    # sh and env exec: the pid the caller holds (and signals) is the command's Python
    assert run.stopped == run.started


def test_the_python_part_starts_blocked_and_unblocks_before_the_package(installed: Installed, tmp_path: Path) -> None:
    """The mechanism itself, read from /proc: SIGINT blocked while site imports, unblocked once ours runs."""
    masks = tmp_path / "masks"
    run = run_stopped_at(installed, "sitecustomize", masks)
    assert run.done.returncode == 130, run.done.stderr
    seen = dict(line.split() for line in masks.read_text().splitlines())
    sigint = 1 << (signal.SIGINT - 1)
    assert int(seen["site"], 16) & sigint
    assert not int(seen["cli"], 16) & sigint


def test_an_env_without_block_signal_still_starts_the_command(installed: Installed, tmp_path: Path) -> None:
    """busybox's env has no --block-signal: the Python part starts unblocked, as before."""
    stub = tmp_path / "env"
    stub.write_text('#!/bin/sh\necho "env: unrecognized option: $1" >&2\nexit 125\n')
    stub.chmod(0o755)
    done = subprocess.run(
        [str(installed.command), "--version"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": str(tmp_path)},
        timeout=TIMEOUT_S,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("accept-order, version ")


def test_a_symbolic_link_to_the_command_finds_its_python_part(installed: Installed, tmp_path: Path) -> None:
    link = tmp_path / "accept-order"
    link.symlink_to(installed.command)
    done = subprocess.run([str(link), "--version"], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("accept-order, version ")


def test_the_launcher_without_its_python_part_says_so(tmp_path: Path) -> None:
    alone = tmp_path / "accept-order"
    alone.write_bytes((SCRIPTS / "accept-order").read_bytes())
    alone.chmod(0o755)
    done = subprocess.run([str(alone), "--version"], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"accept-order: error: {tmp_path}/accept-order-python is missing"
        " (the command's Python part, installed beside it)"
    ]


def _installed_here(bin_dir: Path) -> Path:
    """The two scripts installed for this test's own interpreter (the package is importable there)."""
    bin_dir.mkdir()
    install_scripts(bin_dir, sys.executable)
    return bin_dir / "accept-order"


def _other_python_part(directory: Path) -> None:
    """An accept-order-python that is not the command's: what runs it says so, status 3."""
    stray = directory / "accept-order-python"
    stray.write_text('#!/bin/sh\necho "the stray accept-order-python ran" >&2\nexit 3\n')
    stray.chmod(0o755)


def test_a_symbolic_link_beside_another_python_part_runs_the_one_it_links_to(tmp_path: Path) -> None:
    """A link in a directory that holds an accept-order-python of something else (another install's)."""
    command = _installed_here(tmp_path / "bin")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _other_python_part(elsewhere)
    for name in ("accept-order", "ao"):
        (elsewhere / name).symlink_to(command)
        done = subprocess.run([str(elsewhere / name), "--version"], capture_output=True, text=True, timeout=TIMEOUT_S)
        assert (done.returncode, done.stderr) == (0, ""), name
        assert done.stdout.startswith("accept-order, version ")


def test_a_launcher_bash_found_on_path_never_runs_a_python_part_of_the_working_directory(tmp_path: Path) -> None:
    """`bash accept-order` searches PATH for the file: $0 is then its bare name, and ./accept-order-python is
    whatever file the working directory holds."""
    command = _installed_here(tmp_path / "bin")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    _other_python_part(cwd)
    done = subprocess.run(
        ["bash", "accept-order", "--version"],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PATH": f"{command.parent}:{os.environ.get('PATH', '')}"},
        timeout=TIMEOUT_S,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("accept-order, version ")


# An env that stands for GNU env's probe (`env --block-signal=INT`, alone) and holds it until the test's word:
# says so on the pipe AO_READY_FD, waits on AO_GO_FD, then exits 0 as GNU env does. Anything else is refused.
PROBE_ENV = """
import os, sys

if sys.argv[1:] != ["--block-signal=INT"]:
    sys.exit(99)
os.write(int(os.environ["AO_READY_FD"]), b"probing")
os.read(int(os.environ["AO_GO_FD"]), 1)
"""


def test_a_sigint_while_the_launcher_probes_env_is_one_line_and_130(tmp_path: Path) -> None:
    """The shell's own moment: a SIGINT sent to the command (the shell, then) while it waits for its probe."""
    command = _installed_here(tmp_path / "bin")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "env").write_text(f"#!{sys.executable}\n{PROBE_ENV}")  # Python: sh redirects only fds 0-9
    (stubs / "env").chmod(0o755)
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    env = {
        **os.environ,
        "PATH": f"{stubs}:{os.environ.get('PATH', '')}",
        "AO_READY_FD": str(ready_w),
        "AO_GO_FD": str(go_r),
    }
    proc = subprocess.Popen(
        [str(command), "--version"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        pass_fds=(ready_w, go_r),
    )
    os.close(ready_w)
    os.close(go_r)
    try:
        readable, _, _ = select.select([ready_r], [], [], TIMEOUT_S)
        assert readable and os.read(ready_r, 64), "the launcher never probed env"
        os.kill(proc.pid, signal.SIGINT)
    finally:
        os.close(ready_r)
        os.close(go_w)  # the probe reads its end and exits 0
        try:
            out, err = proc.communicate(timeout=TIMEOUT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert (proc.returncode, out) == (130, "")
    assert err.splitlines() == HELD


def test_a_venv_whose_path_holds_a_space_runs_the_command(tmp_path: Path) -> None:
    """pip writes the Python part's #! line unquoted, which the kernel cuts at the blank ('required file not
    found', before the launcher as well): the launcher runs the interpreter that line names by its whole path."""
    venv = make_venv(tmp_path / "with space" / "venv")
    done = subprocess.run([str(venv.command), "--version"], capture_output=True, text=True, timeout=TIMEOUT_S)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("accept-order, version ")
    run = run_stopped_at(venv, "sitecustomize")  # and a SIGINT in its start-up is held there too
    assert (run.done.returncode, run.done.stderr.splitlines()) == (130, HELD)
