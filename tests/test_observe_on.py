"""--observe-on: observe runs on the server's host for the load's window (over execnet; here "popen" gateways
stand in for ssh, the server's host being this one) and its per-worker accepts are set beside the replies'
counts. The kernel's count (bpftrace) is the witness the replies are checked against; tests/test_clients_faults.py
runs it over ssh in a cluster of namespaces."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import execnet
import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.experiments.observe.remote import joined
from accept_order.experiments.observe.result import ObservedWorker
from accept_order.loads.hosts import gateways

traced_only = pytest.mark.skipif(
    shutil.which("bpftrace") is None or not hasattr(sys, "getwindowsversion") and __import__("os").geteuid() != 0,
    reason="exact accept counts need bpftrace as root",
)


@pytest.fixture
def popen_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    def spec(destination: str, hosts: Any, index: int) -> Any:
        return execnet.XSpec(f"popen//id={destination}{index}//python={sys.executable}")

    monkeypatch.setattr(gateways, "_spec", spec)


@traced_only
def test_accepts_on_the_server_host_equal_the_replies(popen_hosts: None, tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    result = run_cli(["latency", "-w", "3", "-n", "900", "--observe-on", "srv", "--json", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    [seen] = document["evidence"]["observed_on"]
    pids = [c["pid"] for c in document["counters"]]
    assert seen["host"] == "srv" and seen["traced"] and seen["agrees"] is True
    accepts = {w["pid"]: w["accepts"] for w in seen["workers"]}
    assert accepts == dict(zip(pids, document["served"], strict=True))  # the kernel's count is the replies'
    assert sum(accepts.values()) == 900
    assert "each worker's accepts equal the connections its replies named (900 in all)" in result.stdout
    shown = run_cli(["show", str(out)])
    assert shown.exit_code == 0 and "observe on srv" in shown.stdout


def test_an_observe_host_that_cannot_be_reached_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host nowhere\n  HostName 192.0.2.1\n  ConnectTimeout 1\n  BatchMode yes\n")
    result = run_cli(["latency", "-n", "20", "--observe-on", "nowhere", "--ssh-config", str(config)])
    assert_one_error_line(result, 1, "nowhere", "could not be reached")


def _worker(pid: int, accepts: int | None) -> ObservedWorker:
    return ObservedWorker(0, pid, None, accepts, 0, None, 0.01, 1, 1)


class _Seen:
    """The fields of ObserveResult that `joined` reads."""

    def __init__(self, workers: list[ObservedWorker], traced: bool = True) -> None:
        self.workers, self.traced = tuple(workers), traced
        self.program, self.source, self.wall_s, self.mechanism, self.notes = "nginx", "bpftrace", 1.0, None, ()
        self.counters: dict[str, int] = {}


def test_joined_says_when_the_counts_differ_or_cannot_be_compared() -> None:
    same = joined("srv", _Seen([_worker(10, 5), _worker(11, 7)]), [10, 11], [5, 7])  # type: ignore[arg-type]
    assert same["agrees"] is True and [w["served_by_replies"] for w in same["workers"]] == [5, 7]
    differ = joined("srv", _Seen([_worker(10, 6), _worker(11, 7)]), [10, 11], [5, 7])  # type: ignore[arg-type]
    assert differ["agrees"] is False
    # a worker the replies named that observe never saw is a difference too
    unseen = joined("srv", _Seen([_worker(10, 5)]), [10, 11], [5, 7])  # type: ignore[arg-type]
    assert unseen["agrees"] is False
    sampled = joined("srv", _Seen([_worker(10, None)], traced=False), [10], [5])  # type: ignore[arg-type]
    assert sampled["agrees"] is None
    # -w 3 for a server elsewhere with 2 workers: no reply named index 2 (its pid 0), and nothing is missing
    fewer = joined("srv", _Seen([_worker(10, 5), _worker(11, 7)]), [10, 11, 0], [5, 7, 0])  # type: ignore[arg-type]
    assert fewer["agrees"] is True


@pytest.mark.parametrize(
    "bad",
    [{"workers": [{"pid": "x"}]}, {"agrees": "yes"}, {"host": 5}, {"workers": [{"accepts": 3}]}, "srv"],
)
def test_a_file_with_a_bad_observation_is_one_line(tmp_path: Path, bad: Any) -> None:
    good = tmp_path / "good.json"
    assert run_cli(["latency", "-w", "2", "-n", "50", "--json", str(good)]).exit_code == 0
    document = json.loads(good.read_text())
    document["evidence"]["observed_on"] = [{"host": "srv", **bad} if isinstance(bad, dict) else bad]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(document))
    assert_one_error_line(run_cli(["show", str(broken)]), 1, "observed_on")
