"""A run in a CPU-capped cgroup (a container's cpu.max: a Kubernetes CPU limit, `docker --cpus`) says its cgroup was
throttled, with the kernel's own count of that time, and does not put the wait on other processes: a reviewer's
starved run read 'other processes used 98% of the CPUs' where its quota held it. The test makes a cgroup of its own
(cgroup v2's cpu.max, or v1's cpu.cfs_quota_us where the cpu controller is on v1), 20 ms of CPU each 100 ms, runs
the tool in it, and checks what the report says against the cgroup's cpu.stat (the witness); it removes the cgroup
after."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from accept_order.core.waiting import wait_for

QUOTA_US, PERIOD_US = 20000, 100000


def _mount(fstype: str, option: str = "") -> str | None:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        head, _, tail = line.partition(" - ")
        rest = tail.split()
        if rest and rest[0] == fstype and (not option or option in rest[2].split(",")):
            return head.split()[4]
    return None


def _v2_group(root: str, undo: list[Callable[[], object]]) -> tuple[Path, str] | None:
    """A cgroup under v2's root with the cpu controller, or None where v2 cannot give one."""
    base = Path(root)
    if "cpu" not in (base / "cgroup.controllers").read_text().split():
        return None
    subtree = base / "cgroup.subtree_control"
    if "cpu" not in subtree.read_text().split():
        subtree.write_text("+cpu")
        undo.append(lambda: _controller_off(subtree))  # as it was, once the test's cgroup is gone
    group = Path(tempfile.mkdtemp(prefix="accept-order-test.", dir=root))
    undo.append(group.rmdir)
    (group / "cpu.max").write_text(f"{QUOTA_US} {PERIOD_US}")
    return group, "2"


def _v1_group(root: str, undo: list[Callable[[], object]]) -> tuple[Path, str]:
    group = Path(tempfile.mkdtemp(prefix="accept-order-test.", dir=root))
    undo.append(group.rmdir)
    (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
    (group / "cpu.cfs_quota_us").write_text(str(QUOTA_US))
    return group, "1"


def _controller_off(subtree: Path) -> None:
    try:
        subtree.write_text("-cpu")
    except OSError:  # another cgroup took the controller meanwhile: it stays on
        pass


def _undo(undo: list[Callable[[], object]]) -> None:
    """Each step undone, in reverse; a cgroup that cannot be removed (a process still in it) is an error, not
    left behind unsaid."""
    for step in reversed(undo):
        step()


def _emptied(group: Path) -> bool:
    """Whether the run's processes all ended (the kernel lets a cgroup go once its last task is gone); where some
    did not, they are the tool's leftovers: killed, so the cgroup can go, and said by the caller."""
    procs = group / "cgroup.procs"
    if wait_for(lambda: not procs.read_text().strip(), 10):
        return True
    for pid in procs.read_text().split():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    wait_for(lambda: not procs.read_text().strip(), 10)
    return False


@pytest.fixture
def limited_cgroup() -> Iterator[tuple[Path, str]]:
    """(the cgroup's directory, "2" or "1"): a cgroup of the test's own with a CPU limit of 0.2 CPUs."""
    v2, v1 = _mount("cgroup2"), _mount("cgroup", "cpu")
    made: tuple[Path, str] | None = None
    undo: list[Callable[[], object]] = []
    try:
        if v2 is not None:
            made = _v2_group(v2, undo)
        if made is None and v1 is not None:
            made = _v1_group(v1, undo)
    except OSError as exc:
        _undo(undo)
        pytest.skip(f"no cgroup of the test's own with a CPU limit: {exc}")
    if made is None:
        pytest.skip("no writable cgroup hierarchy with the cpu controller (cgroup v2's cpu, or v1's)")
    group = made[0]
    try:
        yield made
    finally:
        emptied = _emptied(group)
        _undo(undo)
    assert emptied, f"the tool left processes running in {group} after it exited"


def _kernel_throttled_ms(group: Path, version: str) -> float:
    """The witness: how long the kernel held the cgroup off the CPUs, from its own cpu.stat."""
    stat = dict(line.split()[:2] for line in (group / "cpu.stat").read_text().splitlines())
    return int(stat["throttled_usec"]) / 1000 if version == "2" else int(stat["throttled_time"]) / 1e6


def _in_cgroup(group: Path, arguments: str) -> subprocess.CompletedProcess[str]:
    """The tool run in `group`: the shell moves itself in, then becomes the tool, so every process it starts is in
    it too."""
    tool = f"{sys.executable} -m accept_order {arguments}"
    done = subprocess.run(
        ["sh", "-c", f"echo $$ > {group / 'cgroup.procs'} && exec {tool}"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done


THROTTLED = r"run's cgroup was throttled for (\d+) ms \(summed over the CPUs\) in its [\d.]+ s \(([^)]*)\)"
LIMITS = (f"cpu.max {QUOTA_US}/{PERIOD_US}", f"cpu.cfs_quota_us/period {QUOTA_US}/{PERIOD_US}")


@pytest.mark.skipif(sys.platform != "linux", reason="cgroups are Linux's")
def test_a_throttled_run_names_its_limit_not_other_processes(limited_cgroup: tuple[Path, str], tmp_path: Path) -> None:
    group, version = limited_cgroup
    out = tmp_path / "latency.json"
    done = _in_cgroup(group, f"latency --modes epoll -w 1 --driver-procs 1 -n 3000 --json {out}")
    kernel_ms = _kernel_throttled_ms(group, version)
    assert kernel_ms > 0  # 0.2 CPUs for a run that needs more: the kernel throttled it
    report = " ".join(done.stdout.split())  # as one line: the report wraps at the terminal's width
    said = re.findall(THROTTLED, report)
    assert said, done.stdout
    ms, limit = said[0]
    assert 0 < int(ms) <= kernel_ms + 1  # the run's part of what the kernel counted, never more
    assert limit in LIMITS
    # the waits are not put on other processes (whatever share of the busy host they took): a worker and a driver
    # on 2 CPUs had one each, where the load generator's wait was said to be other processes' doing
    assert "so waits for a CPU are partly theirs" not in report
    assert "other processes (host-wide) took them" not in report
    runs = json.loads(out.read_text())["runs"]
    after = runs[0]["evidence"]["machine"]["after"]["cgroup_cpu"]
    assert after["throttled_us"][0] / 1000 <= kernel_ms  # the file's count is the kernel's, read before the end
    # the saved file fits its schema and says the same again
    shown = subprocess.run(
        [sys.executable, "-m", "accept_order", "show", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"run's cgroup was throttled for {ms} ms" in " ".join(shown.stdout.split())


@pytest.mark.skipif(sys.platform != "linux", reason="cgroups are Linux's")
def test_a_throttled_ramp_step_names_its_limit(limited_cgroup: tuple[Path, str], tmp_path: Path) -> None:
    """Each step of a ramp says its own throttle (read around the step), all of them within the kernel's count."""
    group, version = limited_cgroup
    out = tmp_path / "ramp.json"
    done = _in_cgroup(group, f"ramp -w 1 --rates 200,2000 --json {out}")
    kernel_ms = _kernel_throttled_ms(group, version)
    steps = json.loads(out.read_text())["steps"]
    throttled = [step.get("throttled_ms") for step in steps]
    assert all(ms is not None and ms >= 0 for ms in throttled), throttled
    assert 0 < sum(throttled) <= kernel_ms  # the steps' throttles are parts of the kernel's, apart
    assert {step["cpu_limit"] for step in steps} <= set(LIMITS)
    said = re.findall(THROTTLED, " ".join(done.stdout.split()))
    assert said, done.stdout
    assert {int(ms) for ms, _ in said} <= {round(ms) for ms in throttled}  # each as its step's file holds it
