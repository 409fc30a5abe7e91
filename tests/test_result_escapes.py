"""Nothing a result file or its name holds reaches the terminal as a control character: error messages name files
escaped, escape_controls escapes every control character and keeps the text, and the CLI's consoles print markup
and controls as text."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from result_file_cases import DOC, HOSTILE, one_line
from rich.text import Text

from accept_order.core.errors import AcceptOrderError
from accept_order.core.text import escape_controls
from accept_order.results.files import (
    check_output_path,
    check_schema,
    read_document,
    write_document,
)


def test_error_messages_show_file_names_escaped(tmp_path: Path) -> None:
    hostile = tmp_path / HOSTILE
    hostile.mkdir()  # refused by every function, each naming it
    errors: list[pytest.ExceptionInfo[AcceptOrderError]] = []
    for call in (
        lambda: check_output_path(str(hostile)),
        lambda: write_document(hostile, DOC),
        lambda: read_document(hostile),
        lambda: check_schema({}, str(hostile), newest=1),
    ):
        with pytest.raises(AcceptOrderError) as exc:
            call()
        errors.append(exc)
    for exc in errors:
        assert "evil\\x1b]0;pwned\\x07\\x1b[2J\\n.json" in one_line(exc)


def test_escape_controls_removes_terminal_escapes() -> None:
    shown = escape_controls("\x1b[31mred\x1b]0;title\x07")
    assert "\x1b" not in shown and "\x07" not in shown
    assert shown == "\\x1b[31mred\\x1b]0;title\\x07"


def test_escape_controls_escapes_every_control_character_and_keeps_text() -> None:
    controls = "".join(map(chr, [*range(0x20), 0x7F, *range(0x80, 0xA0)]))
    shown = escape_controls(controls)
    assert not [c for c in shown if unicodedata.category(c) == "Cc"]
    assert shown.startswith("\\x00\\x01") and "\\x08\\t\\n\\x0b" in shown
    assert "\\x1f\\x7f\\x80" in shown and shown.endswith("\\x9f")
    assert escape_controls("naïve — ✓ 名前") == "naïve — ✓ 名前"
    assert escape_controls("a\u202eb\u2028c\udcff") == "a\\u202eb\\u2028c\\udcff"
    assert escape_controls("\udcff").encode("utf-8")  # a lone surrogate would make printing raise


def test_escape_controls_accepts_any_object() -> None:
    assert escape_controls(3) == "3"
    assert escape_controls(None) == "None"
    assert escape_controls(Path("a\nb")) == "a\\nb"
    assert escape_controls(10**5000).startswith("<unprintable")


def test_the_cli_consoles_print_markup_and_controls_as_text() -> None:
    """The last defence: whatever reaches the CLI's consoles unescaped (a --title, a file name) prints with
    its control characters escaped and its rich markup uninterpreted; line breaks stay line breaks."""
    from accept_order.cli.output import stderr, stdout

    for console in (stdout(), stderr()):
        with console.capture() as captured:
            console.print("[bold red]x[/] \x1b]0;t\x07\x1b[2J\nnext\u202e", Text("a\x9bb"))
        out = captured.get()
        assert not [c for c in out if unicodedata.category(c) in ("Cc", "Cf", "Zl") and c != "\n"], repr(out)
        assert out.startswith("[bold red]x[/] \\x1b]0;t") and "\\x1b[2J\nnext\\u202e a\\x9bb\n" in out
