"""`inspect`'s "What changes it" starts from what is in effect (issue 26, section 4).

A running server in the mode /proc shows gets, for each other mode of its kind, the settings that take it
there: never one it has already, and one that has no effect in the mode seen (so that it may be set
already: nginx's accept_mutex under reuseport) says so. Each row says whether /proc would confirm it once
set. Pure: the kinds' declarations (ModeInfo.settings) and fixed inspect results, no server runs.
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from accept_order.core.kinds import knob
from accept_order.experiments.inspect.changes import change_views
from accept_order.experiments.inspect.report import inspect_report
from accept_order.experiments.inspect.result import InspectResult
from accept_order.servers.registry import KINDS, launched_kinds

GOLDEN = Path(__file__).parent / "data" / "golden" / "inspect.json"  # nginx epoll, 3 workers, saved by the tool
MAY_BE_SET = "may be set already"


def _seen_states() -> list[tuple[str, tuple[str, ...]]]:
    """Every state inspect can see of every launched kind: the kind's modes that look like one mechanism."""
    states = []
    for name in launched_kinds():
        by_mechanism: dict[str, list[str]] = {}
        for mode in KINDS[name].modes().values():
            by_mechanism.setdefault(mode.mechanism, []).append(mode.name)
        states += [(name, tuple(modes)) for modes in by_mechanism.values()]
    return states


STATES = _seen_states()


def test_nginx_with_reuseport_is_offered_the_listen_not_the_mutex() -> None:
    """The issue's case: `accept_mutex on;` and `listen ... reuseport;`, seen as reuseport."""
    rows = {c.mode: c for c in change_views(KINDS["nginx"], ("reuseport",))}
    assert set(rows) == {"epoll", "accept-mutex"}
    for mode, mutex in (("epoll", "accept_mutex off;"), ("accept-mutex", "accept_mutex on;")):
        first, then = rows[mode].settings
        assert knob(first) == "listen" and "reuseport" in first and MAY_BE_SET not in first
        assert then.startswith(mutex) and "no effect with nginx's reuseport" in then and MAY_BE_SET in then
        assert rows[mode].alike == ()


@pytest.mark.parametrize(
    ("seen", "mode", "offered"),
    [
        ("epoll", "accept-mutex", "accept_mutex on;"),
        ("accept-mutex", "epoll", "accept_mutex off;"),
        ("epoll", "reuseport", "listen ADDRESS:PORT reuseport;"),
        ("accept-mutex", "reuseport", "listen ADDRESS:PORT reuseport;"),
    ],
)
def test_nginx_without_reuseport_is_offered_the_one_setting_that_differs(seen: str, mode: str, offered: str) -> None:
    rows = {c.mode: c for c in change_views(KINDS["nginx"], (seen,))}
    assert rows[mode].settings == (offered,)


@pytest.mark.parametrize(("kind", "seen"), STATES, ids=[f"{k}-{'+'.join(s)}" for k, s in STATES])
def test_every_row_changes_something_and_offers_nothing_already_set(kind: str, seen: tuple[str, ...]) -> None:
    """A row's unmarked settings are each one no seen mode has, and every row has one: the setting that
    makes the change. A marked one (may be set already) is one the seen modes do not all have."""
    modes = KINDS[kind].modes()
    held = [set(modes[name].settings) for name in seen]
    for row in change_views(KINDS[kind], seen):
        changes = [s for s in row.settings if MAY_BE_SET not in s]
        assert changes, f"{kind} {row.mode} from {seen}: no setting changes anything"
        assert not any(s in have for s in changes for have in held), (row.mode, changes)
        marked = [s.partition(" (")[0] for s in row.settings if MAY_BE_SET in s]
        assert not any(all(s in have for have in held) for s in marked), (row.mode, marked)
        assert row.mechanism != modes[seen[0]].mechanism


@pytest.mark.parametrize("kind", launched_kinds())
def test_modes_told_apart_by_proc_differ_in_a_setting_both_name(kind: str) -> None:
    """What the rows rest on: two modes /proc shows differently set one knob differently (a knob a mode
    does not name has no effect on it, so it cannot be what tells them apart)."""
    modes = list(KINDS[kind].modes().values())
    for a in modes:
        for b in modes:
            if a.mechanism != b.mechanism:
                knobs_a, knobs_b = a.knobs(), b.knobs()
                assert any(knobs_a[k] != knobs_b[k] for k in knobs_a.keys() & knobs_b.keys()), (a.name, b.name)


def test_uwsgi_rows_proc_cannot_confirm_say_so() -> None:
    """From the thunder lock, default and reuse-port look the same in /proc: each row names the other, and
    both need the lock off first."""
    rows = {c.mode: c for c in change_views(KINDS["uwsgi"], ("thunder-lock",))}
    assert rows["default"].alike == ("reuse-port",) and rows["reuse-port"].alike == ("default",)
    assert rows["reuse-port"].settings[0] == "thunder-lock = false"
    assert rows["reuse-port"].settings[1].startswith("reuse-port = true (no effect with uwsgi's thunder-lock")
    from_herd = change_views(KINDS["uwsgi"], ("default", "reuse-port"))
    assert [(c.mode, c.settings, c.alike) for c in from_herd] == [("thunder-lock", ("thunder-lock = true",), ())]


def _render(result: InspectResult) -> str:
    console = Console(width=80, file=io.StringIO())
    console.print(inspect_report(result))
    return console.file.getvalue()  # type: ignore[attr-defined]


def _golden(mechanism: str, modes: tuple[str, ...], kind: str = "nginx") -> InspectResult:
    result = InspectResult.from_dict(json.loads(GOLDEN.read_text()))
    seen = dataclasses.replace(result.mechanism, name=mechanism, modes=modes)
    return dataclasses.replace(result, recognised=kind, mechanism=seen, changes=change_views(KINDS[kind], modes))


def test_the_report_says_where_it_starts_and_what_proc_confirms() -> None:
    text = _render(_golden("reuseport", ("reuseport",)))
    assert "What changes it (nginx, from reuseport)" in text
    assert "A row's settings are what it changes from reuseport; inspect would confirm each" in text
    assert "/proc confirms" not in text  # every row would be confirmed: no column for it
    assert max(len(line) for line in text.splitlines()) <= 80
    herd = _render(_golden("accept-mutex", ("thunder-lock",), kind="uwsgi"))
    assert "/proc confirms" in herd and "no: as reuse-port" in herd and "no: as default" in herd


def test_a_file_from_before_is_printed_as_it_was_saved() -> None:
    """A saved result without `alike` (tests/data/golden/inspect.json) shows its rows, no column for it."""
    result = InspectResult.from_dict(json.loads(GOLDEN.read_text()))
    assert result.changes and all(c.alike is None for c in result.changes)
    text = _render(result)
    assert "accept-order run --server nginx -m reuseport" in text
    assert "/proc confirms" not in text and "A row's settings" not in text
    assert "What changes it (nginx)" in [line.strip() for line in text.splitlines()]


def test_a_kind_whose_modes_all_look_alike_says_so() -> None:
    text = _render(_golden("epoll-herd", ("asyncio", "uvloop"), kind="uvicorn"))
    assert "every mode of uvicorn looks like this in /proc (asyncio or uvloop)" in text
