"""MkDocs hook: `<!-- click-reference -->` in a page becomes every command's --help, read from click itself.

The reference is rendered from the commands at build time, so it cannot drift from them: an option added,
renamed or removed in src/ is in the next build. Each command's help is drawn 100 columns wide.
"""

from __future__ import annotations

from typing import Any

import click

MARKER = "<!-- click-reference -->"
WIDTH = 100


def _help(command: click.Command, name: str, parent: click.Context | None) -> str:
    ctx = click.Context(command, info_name=name, parent=parent, max_content_width=WIDTH, terminal_width=WIDTH)
    return command.get_help(ctx)


def reference() -> str:
    from accept_order.cli.app import COMMANDS, main

    root = click.Context(main, info_name="accept-order", max_content_width=WIDTH, terminal_width=WIDTH)
    parts = ["## accept-order", "", "```text", main.get_help(root), "```", ""]
    for name in COMMANDS:
        command = main.get_command(root, name)
        assert command is not None, name
        parts += [f"## accept-order {name}", "", "```text", _help(command, name, root), "```", ""]
    return "\n".join(parts)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return markdown.replace(MARKER, reference()) if MARKER in markdown else markdown
