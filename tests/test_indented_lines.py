"""render/indented.py: IndentedLines prints what the report's console prints for the same lines as left-padded
paragraphs (one Padding(Text) each, as inspect's epoll lines were), at every width and off a terminal."""

from __future__ import annotations

import random

import pytest
from conftest import counted_calls
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.text import Text

from accept_order.cli.output import print_report
from accept_order.render.indented import IndentedLines

LINES = [
    "pid 24917 fd 21: tfd 4 events 10000019 ino 86663331 (EPOLLEXCLUSIVE); 2 other watches",
    "short",
    "  two of its own",
    "",
    "tab\there",
    "ends in spaces  ",
    "日本語の行 wide cells " * 3,
    "a-very-long-word-" * 9,
    "words " * 30,
]


def _printed(
    renderable: RenderableType, columns: int | None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> str:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)  # off a terminal, no COLUMNS: nothing wrapped
    else:
        monkeypatch.setenv("COLUMNS", str(columns))
    capsys.readouterr()
    print_report(Group(Text("before"), renderable, Text("after")))
    return capsys.readouterr().out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("columns", [None, 12, 40, 80, 160])
def test_prints_what_padded_paragraphs_print(
    seed: int, columns: int | None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = random.Random(seed).choices(LINES, k=12)
    ours = _printed(IndentedLines(lines, 2), columns, monkeypatch, capsys)
    theirs = _printed(
        Group(*(Padding(Text(line), (0, 0, 0, 2), expand=False) for line in lines)), columns, monkeypatch, capsys
    )
    assert ours == theirs


def test_lines_that_fit_are_not_wrapped_one_by_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """At 160 columns no epoll line wraps: no Text is wrapped for them (the rich path wraps one a line)."""
    with counted_calls(Text, "wrap") as calls:
        _printed(IndentedLines([LINES[0]] * 50, 2), 160, monkeypatch, capsys)
    assert calls[0] <= 2  # "before" and "after"
