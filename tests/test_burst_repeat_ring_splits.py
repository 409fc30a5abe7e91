"""burst --repeat says how often a burst larger than io-uring's ring stayed with one worker and how often it was handed
on: the one run's note calls one burst's split 'one of both outcomes (--repeat shows how often each)', and the repeat's
report showed only the times ('burst --modes io-uring -w 2 --clients 500 --repeat 3', load 15).

The file is 'burst --modes io-uring,epoll -w 2 --clients 500,100 --repeat 4' (load 15): io-uring's 500 split 387/113,
500/0, 265/235 and 250/250 by the replies; 100 fit in a ring, and epoll has no ring."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

FILE = Path(__file__).parent / "data" / "burst_repeat_io_uring_500.json"


def test_the_repeat_says_how_often_each_outcome_came(tmp_path: Path) -> None:
    splits = [
        "/".join(map(str, cell["served"]))
        for row in json.loads(FILE.read_text())["rounds"]
        for run in row
        if run["server"]["mode"] == "io-uring"
        for cell in run["cells"]
        if cell["clients"] == 500
    ]
    assert splits == ["387/113", "500/0", "265/235", "250/250"]  # the replies, the witness
    out = " ".join(run_cli(["show", str(FILE)], 1000).stdout.split())
    assert (
        "io-uring, 500: one worker took every connection in 1 of 4 runs, handed on in 3 (accepted per worker: "
        "387/113, 500/0, 265/235, 250/250)" in out
    )
    assert "io-uring, 100:" not in out and "epoll, 500: one worker" not in out
