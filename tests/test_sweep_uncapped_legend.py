"""sweep's legend says 'never above the cap' only where the cap applies.

`sweep -m io-uring --accept-batch 1,0 -c 8` printed max/wakeup 8 in the '1 limit' row beside the legend's
'max/wakeup: most connections one worker accepted in one wakeup (never above the cap)': the io-uring mode takes
every completion its ring holds per wakeup (ModeInfo.batches False, the note under the table says the cap is
not applied), so the legend contradicted its own row.
"""

from __future__ import annotations

import re

import pytest
from conftest import run_cli

from accept_order.servers.modes import MODES


def test_an_uncapped_modes_legend_does_not_promise_the_cap() -> None:
    if reason := MODES["io-uring"].unavailable():
        pytest.skip(reason)
    result = run_cli(["sweep", "-m", "io-uring", "-w", "2", "-n", "200", "-c", "8", "--accept-batch", "1,0"], 1000)
    assert result.exit_code == 0, result.output
    row = re.search(r"^1 limit\s.*\|\s+(\d+) \|\s+[\d.]+\s*$", result.stdout, re.M)
    assert row is not None, result.stdout
    assert int(row.group(1)) > 1  # the ring's completions, several per wakeup with 8 in flight, whatever the cap
    assert "never above the cap" not in result.stdout
    assert "max/wakeup: most connections one worker accepted in one wakeup (the cap does not bound it here)" in (
        result.stdout
    )


def test_a_capped_modes_legend_still_promises_it() -> None:
    result = run_cli(["sweep", "-m", "epoll", "-w", "2", "-n", "200", "-c", "8", "--accept-batch", "1,0"], 1000)
    assert result.exit_code == 0, result.output
    row = re.search(r"^1 limit\s.*\|\s+(\d+) \|\s+[\d.]+\s*$", result.stdout, re.M)
    assert row is not None and int(row.group(1)) == 1
    assert "(never above the cap)" in result.stdout
