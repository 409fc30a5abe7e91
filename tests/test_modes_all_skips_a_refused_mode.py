"""'compare --server apache -w 1' (its --modes all by default) refused the whole run with 'apache buckets needs
--workers 2 or more', where prefork, prefork-mutex and event run with one child (Debian's Apache 2.4). Every mode
now runs that these settings can, and the refused one is listed as skipped with its refusal; asked for alone, the
refusal stands as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core.errors import PlanError
from accept_order.core.spec import ServerSpec
from accept_order.servers.launched.apache_config import apache_missing
from accept_order.servers.registry import variants

if apache_missing():
    pytest.skip(f"Apache launched runs: {apache_missing()}", allow_module_level=True)

REFUSAL = "apache buckets needs --workers 2 or more (one child per bucket at least)"


def test_every_mode_but_the_refused_one_is_planned() -> None:
    specs, skipped = variants(ServerSpec(kind="apache", workers=1), None)
    assert [s.mode for s in specs] == ["prefork", "prefork-mutex", "event"]
    assert skipped == {"buckets": REFUSAL}
    specs, skipped = variants(ServerSpec(kind="apache", workers=2), None)  # two children: every mode
    assert "buckets" in [s.mode for s in specs] and not skipped
    with pytest.raises(PlanError, match="needs --workers 2"):  # asked for by name: refused as before
        variants(ServerSpec(kind="apache", workers=1), ["buckets"])


def test_compare_runs_the_others_with_one_child(tmp_path: Path) -> None:
    """The real server: its three modes run one child each (the records' one pid), buckets said skipped."""
    out = tmp_path / "c.json"
    result = run_cli(["compare", "--server", "apache", "-w", "1", "-n", "2", "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert [r["server"]["mode"] for r in doc["runs"]] == ["prefork", "prefork-mutex", "event"]
    for run in doc["runs"]:
        assert len({r["pid"] for r in run["records"]}) == 1 and all(r["error"] is None for r in run["records"])
    assert doc["skipped"] == {"buckets": REFUSAL}
    assert f"not available: {REFUSAL}" in " ".join(result.stdout.split())
    alone = run_cli(["compare", "--server", "apache", "-w", "1", "--modes", "buckets"])
    assert_one_error_line(alone, 2, REFUSAL)


def test_a_server_whose_every_mode_is_refused_refuses_the_run() -> None:
    """'compare --server apache,nginx --accept-batch 4' ran apache alone, which reads no batch, and exited 0 with every
    nginx mode skipped for the batch typed: nothing ran with the option asked for. A server named whose modes are all
    refused refuses the run, as it does alone; one whose other modes run still skips the refused one."""
    base = ServerSpec(kind="apache", workers=3, accept_batch=4)
    with pytest.raises(PlanError, match="--accept-batch with nginx"):
        variants(base, None, ["apache", "nginx"])
    specs, skipped = variants(ServerSpec(kind="apache", workers=1), None, ["apache", "nginx"])
    assert [f"{s.kind} {s.mode}" for s in specs] == [
        "apache prefork",
        "apache prefork-mutex",
        "apache event",
        "nginx epoll",
        "nginx accept-mutex",
        "nginx reuseport",
    ]
    assert skipped == {"apache buckets": REFUSAL}
