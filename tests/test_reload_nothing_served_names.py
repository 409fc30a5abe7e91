"""reload's served-nothing line names each run as its report does (experiments/reload/report.run_name): 01f917a
named every run '<mode> <how> migrate=<0|1|2>', so an epoll run (one shared queue, which tcp_migrate_req does not
touch and whose report row reads 'epoll leave') was 'epoll leave migrate=0' in the error line alone."""

from __future__ import annotations

import json
from pathlib import Path

from accept_order.cli.reload import reload_tally
from accept_order.experiments.reload.report import run_name
from accept_order.experiments.reload.result import ReloadResult

GOLDEN = Path(__file__).parent / "data" / "golden" / "reload.json"


def test_each_run_is_named_as_its_report_names_it() -> None:
    runs = ReloadResult.from_dict(json.loads(GOLDEN.read_text())).runs
    labels = [reload_tally(run).label for run in runs]
    assert labels == [run_name(run) for run in runs]
    assert labels == ["epoll leave", "reuseport leave migrate=0", "reuseport leave migrate=1"], labels
