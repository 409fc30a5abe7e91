"""An error in a later burst size, ramp step or sweep cap keeps what was measured before it (issue 29's review):
the loads so far are saved to --json and reported, the file saying why it stopped, then the error's one line
and exit 1. The error is a LoadError raised by the second load (drive_load patched), or, over client hosts
(execnet "popen" gateways standing in for ssh), every host gone between two steps."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import execnet
import pytest
from conftest import assert_one_error_line, run_cli
from test_clients_cli import own_address

from accept_order.core.errors import LoadError
from accept_order.experiments import session
from accept_order.experiments.burst import run as burst_run
from accept_order.experiments.ramp import run as ramp_run
from accept_order.loads.hosts import gateways

WHY = "the load generator broke on purpose"


def failing_second(real: Callable[..., Any], before: Callable[[], None] | None = None) -> Callable[..., Any]:
    """drive_load as it is for the first load; the second raises LoadError (or, given `before`, runs it first
    and then drives the load for real, which then fails on its own)."""
    calls = [0]

    def drive(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == 2:
            if before is None:
                raise LoadError(WHY)
            before()
        return real(*args, **kwargs)

    return drive


def stopped_with(result: Any, code: int = 1) -> str:
    """The command failed with `code`; its stderr is `wrote FILE` (when --json) then exactly one error line."""
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("accept-order: error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], lines
    assert "Traceback" not in result.output
    return errors[0]


def test_a_burst_keeps_the_sizes_before_the_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(burst_run, "drive_load", failing_second(session.drive_load))
    out = tmp_path / "burst.json"
    result = run_cli(["burst", "-w", "2", "--clients", "40,80", "--json", str(out)])
    assert WHY in stopped_with(result)
    document = json.loads(out.read_text())
    [run] = document["runs"]
    assert [c["clients"] for c in run["cells"]] == [40]  # the burst of 40, whole
    assert sum(run["cells"][0]["served"]) == 40
    assert document["stopped"] == WHY and not document.get("interrupted")
    assert f"Stopped early: {WHY}; kept: what was measured before it (1 burst)" in result.stdout
    shown = run_cli(["show", str(out)])
    assert shown.exit_code == 0 and "Stopped early" in shown.stdout


def test_a_burst_over_several_servers_keeps_the_finished_ones(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The second mode's first burst fails: the first mode's run is kept whole (run_each keeps it)."""
    monkeypatch.setattr(burst_run, "drive_load", failing_second(session.drive_load))
    out = tmp_path / "burst.json"
    result = run_cli(["burst", "-w", "2", "--modes", "epoll,reuseport", "--clients", "30", "--json", str(out)])
    assert WHY in stopped_with(result)
    document = json.loads(out.read_text())
    assert [r["server"]["mode"] for r in document["runs"]] == ["epoll"]
    assert document["stopped"] == WHY


def test_a_ramp_keeps_the_steps_before_the_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ramp_run, "drive_load", failing_second(session.drive_load))
    out = tmp_path / "ramp.json"
    # closed-loop steps: an open loop's first step may not hold on a busy machine (its tail is in its rate)
    result = run_cli(["ramp", "-w", "2", "--concurrency-steps", "2,4,6", "--step", "200ms", "--json", str(out)])
    assert WHY in stopped_with(result)
    document = json.loads(out.read_text())
    assert [s["offered"] for s in document["steps"]] == [2]
    assert document["stopped"] == WHY
    # the step that ran held; the report does not call the knee "further out" when the ramp never got there
    assert "then an error stopped the ramp" in result.stdout and "further out" not in result.stdout
    shown = run_cli(["show", str(out)])
    assert shown.exit_code == 0 and f"Stopped early: {WHY}" in shown.stdout


def test_a_sweep_keeps_the_caps_before_the_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(session, "drive_load", failing_second(session.drive_load))
    out = tmp_path / "sweep.json"
    result = run_cli(["sweep", "-w", "2", "-n", "60", "--accept-batch", "1,4,0", "--json", str(out)])
    assert WHY in stopped_with(result)
    document = json.loads(out.read_text())
    assert [r["server"]["accept_batch"] for r in document["runs"]] == [1]
    assert document["stopped"] == WHY
    assert "Stopped early" in run_cli(["show", str(out)]).stdout


def test_repeated_runs_still_end_on_the_error_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """--repeat keeps no stopped rounds (its file cannot say so): the error's one line, as before, not a crash
    on a partial burst taken for a round."""
    monkeypatch.setattr(burst_run, "drive_load", failing_second(session.drive_load))
    result = run_cli(["burst", "-w", "2", "--clients", "20,30", "--repeat", "2"])
    assert_one_error_line(result, 1, WHY)


@pytest.mark.parametrize("bad", [5, ["x"], {"why": "x"}])
def test_a_bad_stopped_field_is_one_line(tmp_path: Path, bad: Any) -> None:
    good = tmp_path / "burst.json"
    assert run_cli(["burst", "-w", "2", "--clients", "20", "--json", str(good)]).exit_code == 0
    document = json.loads(good.read_text())
    document["stopped"] = bad
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(document))
    assert_one_error_line(run_cli(["show", str(broken)]), 1, "stopped")


def test_every_client_host_gone_after_a_step(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Both client hosts go away after the ramp's first step (their interpreters killed, and a new one cannot
    start): the second step cannot run anywhere; the first is saved, the hosts' loss is the one line."""
    address = own_address()
    if address is None:
        pytest.skip("no address but loopback here")
    gone: set[str] = set()

    def spec(destination: str, hosts: Any, index: int) -> Any:
        python = "/nonexistent/python" if destination in gone else sys.executable
        return execnet.XSpec(f"popen//id={destination}{index}//python={python}")

    def lose_every_host() -> None:
        # both, kept or not: a host whose channel was slow to close after the step (a busy machine) is not kept, and
        # would be reached anew for the second step
        gone.update(("c1", "c2"))
        for kept in gateways._kept.values():
            for host in kept.values():
                if host.ssh.process is not None:
                    host.ssh.process.kill()

    monkeypatch.setattr(gateways, "_spec", spec)
    monkeypatch.setattr(ramp_run, "drive_load", failing_second(session.drive_load, lose_every_host))
    out = tmp_path / "ramp.json"
    args = ["ramp", "--clients", "c1,c2", "--host", address, "-w", "2", "--rates", "200,400", "--step", "300ms"]
    result = run_cli([*args, "--keep-going", "--json", str(out)])  # the second step, whether the first held or not
    line = stopped_with(result)
    assert gone, f"the first step did not run to its end: {line}"  # then there was no step to keep
    assert "client host c" in line, line
    document = json.loads(out.read_text())
    [step] = document["steps"]
    assert step["offered"] == 200 and [h["destination"] for h in step["hosts"]] == ["c1", "c2"]
    assert document["stopped"] and document["stopped"] in line
    assert not gateways._kept  # the run's end ended them
