"""docs/reference/commands.md says 'One option means the same thing, under the same name, in every command
that has it'. --clients did not: burst's client counts (1000,3000), latency's, sweep's and ramp's client
hosts (burst names those --client-hosts); 'latency --clients 1000' (a count, as in burst) is read as a host.
Every option name whose type differs between commands must be named there as an exception."""

from __future__ import annotations

from pathlib import Path

import click

from accept_order.cli.app import main

COMMANDS_MD = Path(__file__).parent.parent / "docs" / "reference" / "commands.md"


def options_of_two_kinds() -> dict[str, set[str]]:
    """Option name -> the commands that have it, for names whose click type differs between commands."""
    ctx = click.Context(main)
    kinds: dict[str, set[str]] = {}
    where: dict[str, set[str]] = {}
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None
        for param in command.params:
            # a hidden option is a refusal that says why (ramp's -c, burst's --pool), not a second meaning
            if isinstance(param, click.Option) and not param.hidden:
                for opt in param.opts + param.secondary_opts:
                    kinds.setdefault(opt, set()).add(type(param.type).__name__)
                    where.setdefault(opt, set()).add(name)
    return {opt: where[opt] for opt, types in kinds.items() if len(types) > 1}


def test_an_option_that_means_two_things_is_named_where_the_docs_say_options_mean_one() -> None:
    said = next(p for p in COMMANDS_MD.read_text().split("\n\n") if "One option means the same thing" in p)
    differing = options_of_two_kinds()
    assert "--clients" in differing  # the one there is today: the test would pass vacuously without it
    for opt in differing:
        assert f"`{opt}`" in said, f"{opt} differs between {sorted(differing[opt])}, and {said!r} does not say so"
