"""inspect of gunicorn with gthread workers (each an epoll without EPOLLEXCLUSIVE: epoll-herd, none of the
modes this tool launches gunicorn in) listed 'select: reuse_port = False' as what changes it, a setting the
server had already: the rows are the modes' own settings, not changes from this server, and the report did not
say so. It does now, where no mode of the kind looks like what /proc shows."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from accept_order.experiments.inspect.report import inspect_report
from accept_order.experiments.inspect.result import ChangeView, InspectResult

GOLDEN = Path(__file__).parent / "data" / "golden" / "inspect.json"
UNLIKE = "No mode of gunicorn looks like this in /proc (epoll-herd): a row's settings are that mode's as this tool"


def text(result: InspectResult) -> str:
    console = Console(width=300, record=True, file=io.StringIO())
    console.print(inspect_report(result))
    return console.export_text()


def test_rows_of_a_server_no_mode_looks_like_say_they_are_the_modes_own() -> None:
    golden = InspectResult.from_dict(json.loads(GOLDEN.read_text()))  # from before `alike` was recorded: set it
    nginx = replace(golden, changes=tuple(replace(c, alike=()) for c in golden.changes))
    gthread = replace(
        nginx,
        recognised="gunicorn",
        mechanism=replace(nginx.mechanism, name="epoll-herd", modes=()),
        changes=(
            ChangeView(
                "select", "select", "", ("reuse_port = False",), "accept-order run --server gunicorn -m select", ()
            ),
        ),
    )
    said = text(gthread)
    assert UNLIKE in said, said
    assert "What changes it (gunicorn)" in said and "from epoll" not in said
    # a server in one of the kind's modes: what a row changes from it, as before
    assert "No mode of" not in text(nginx) and "A row's settings are what it changes from epoll" in text(nginx)
