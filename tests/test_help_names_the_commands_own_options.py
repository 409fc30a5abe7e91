"""An option's help names only options its command has: ramp, burst and sweep --help said '--protocol: With
--attach or --target: ...', and 'ramp --attach PID' then said "No such option '--attach'" (only run and latency
attach). Every --name in an option's help is one of its command's options."""

from __future__ import annotations

import re

import click

from accept_order.cli.app import main


def test_every_option_an_options_help_names_is_the_commands_own() -> None:
    assert isinstance(main, click.Group)
    ctx = click.Context(main)
    names = main.list_commands(ctx)
    assert "ramp" in names and "latency" in names
    wrong = []
    for name in names:
        command = main.get_command(ctx, name)
        assert command is not None
        own = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}
        for param in command.params:
            help_text = getattr(param, "help", None) or ""
            for named in re.findall(r"(?<![\w-])--[a-z][a-z-]*[a-z]", help_text):
                if named not in own:
                    wrong.append(f"{name} {param.opts[0]}: {named}")
    assert not wrong, wrong
