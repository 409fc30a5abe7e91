"""--repeat's 'kept connections over the runs' table keeps each split whole at the widths a report is read at.

'latency -w 4 --modes epoll,reuseport --pool -c 16 --requests-per-connection 0 -n 1600 --repeat 3' (load 2.7, Linux
6.18, 2 vCPUs) joined a mode's splits with '; ' in one cell, which rich wrapped where the width ran out: at 80
columns epoll's read '15 1 0 0: 1; 13 3' over '0 0: 1; 10 6 0 0:' over '1', at 100 reuseport's '6 4 3 3: 2; 8' over
'3 3 2: 1', at 120 '...; 10' over '6 0 0: 1': a split's figures read as another's. Each split is now a line of its
own, held whole where it fits (render/fit.py stacks the table instead), the heads on two lines: one table of 91
columns at 100 and 120, stacked in two parts at 80."""

from __future__ import annotations

import dataclasses
import re

import pytest
from conftest import printed_like_the_report
from test_small_sentences_held_nothing import pool_run

from accept_order.experiments.latency.kept_compare import kept_repeat_table
from accept_order.render.fit import fitted

# the runs above: each mode's connections per worker, round by round
SPLITS = {
    "epoll": ((15, 1, 0, 0), (13, 3, 0, 0), (0, 10, 6, 0)),
    "reuseport": ((6, 4, 3, 3), (3, 4, 3, 6), (8, 3, 3, 2)),
}


def _variants() -> dict[str, list]:
    return {
        mode: [pool_run(mode, held, 1000 + 100 * i) for i, held in enumerate(runs)] for mode, runs in SPLITS.items()
    }


@pytest.mark.parametrize("width", [80, 100, 120])
def test_each_split_is_whole_on_a_line(width: int) -> None:
    table = kept_repeat_table(_variants())
    assert table is not None
    printed = printed_like_the_report(fitted(table), width, color=False)
    lines = printed.splitlines()
    assert max(map(len, lines)) <= width, printed
    for whole in ("15 1 0 0: 1", "13 3 0 0: 1", "10 6 0 0: 1", "6 4 3 3: 2", "8 3 3 2: 1"):
        assert any(whole in line for line in lines), (whole, printed)
    # each split printed is whole: its 4 workers' figures, then the runs it was seen in
    seen = [m.group(1).split() for line in lines for m in re.finditer(r"((?:\d+ )*\d+): \d+\b", line)]
    assert len(seen) == 5 and all(len(split) == 4 for split in seen), (seen, printed)
    if width >= 100:  # one table: every column beside the mode, none stacked below
        assert printed.count(" mode ") == 1 and "opened" in printed, printed


def test_a_split_too_wide_for_a_line_still_wraps() -> None:
    """40 workers' split (over 42 characters) is not held on one line: it wraps between figures at 80."""
    wide = {"epoll": [dataclasses.replace(pool_run("epoll", (1,) * 40, 1000))]}
    table = kept_repeat_table(wide)
    assert table is not None
    printed = printed_like_the_report(fitted(table), 80, color=False)
    assert max(map(len, printed.splitlines())) <= 80, printed
    assert printed.count("1 1 1 1") >= 2, printed
