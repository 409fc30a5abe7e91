"""The docs cannot drift: every documented command still parses, the regen script rewrites a block, and the
site builds with --strict.

Documented commands are the `$ ...` lines of the fenced and indented code blocks in README.md and
docs/**/*.md, and the examples of every command's --help epilog. Each `accept-order ...` in them is parsed by
click as the command would be (make_context, resilient_parsing off: types, ranges, choices, unknown options
and commands), without running it.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))
import regen  # noqa: E402  (docs/regen.py: not a package)

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHELL_OPERATORS = {"|", "||", "&", "&&", ";", ">", ">>", "<", "2>", "(", ")"}


def _command_lines(page: Path) -> list[tuple[int, str, bool]]:
    """(line number, command, documented as failing) for every `$ ` line of a code block in `page`, plus the
    README's own set-up lines (indented, without a prompt)."""
    lines = page.read_text().splitlines()
    found: list[tuple[int, str, bool]] = []
    in_fence = False
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        text = line if in_fence else line[4:] if line.startswith("    ") else None
        if text is None:
            continue
        if text.startswith("$ "):
            command = text[2:]
        elif page.name == "README.md" and "accept-order" in text and number <= 3:
            command = text
        else:
            continue
        # an error line right after it (before the next command) says the command is shown failing
        following = []
        for later in lines[number:]:
            later = later[4:] if not in_fence and later.startswith("    ") else later
            if later.startswith("$ ") or later.startswith("```"):
                break
            following.append(later)
        failing = any(f.startswith("accept-order: error:") for f in following)
        found.append((number, command, failing))
    return found


def invocations(command: str) -> list[list[str]]:
    """The argument lists of every accept-order in a shell command line (`$(...)` and `$var` stand for a
    number, nested ones too; redirections are left out)."""
    while re.search(r"\$\([^()]*\)", command):  # the innermost first: `$([ "$(id -u)" = 0 ] || echo sudo)`
        command = re.sub(r"\$\([^()]*\)", "12345", command)
    command = re.sub(r"\$\{?[A-Za-z_]\w*\}?", "12345", command)
    command = re.sub(r"(?<!\S)\d?(?:>>?|<)&?\s*[^\s;|&]+", " ", command)
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    found: list[list[str]] = []
    for i, token in enumerate(tokens):
        if "accept-order " in token:  # inside a quoted string: sh -c '... accept-order ...'
            found += invocations(token)
        elif token == "accept-order" or token.endswith("/accept-order"):
            args: list[str] = []
            rest = tokens[i + 1 :]
            for arg in rest:
                if arg in SHELL_OPERATORS or arg.startswith((">", "<", "#")):
                    break
                args.append(arg)
            found.append(args)
    return found


def parse(args: list[str]) -> None:
    """Parse `accept-order ARGS` as click would, without invoking the command."""
    from accept_order.cli.app import main

    root = click.Context(main, info_name="accept-order")
    if not args or args[0].startswith("-"):
        return  # the group's own options (--help, --version)
    command = main.get_command(root, args[0])
    if command is None:
        raise click.UsageError(f"no command {args[0]!r}")
    try:
        command.make_context(args[0], list(args[1:]), parent=root, resilient_parsing=False)
    except click.exceptions.Exit:
        pass  # --help


def documented() -> list[tuple[str, list[str], bool]]:
    from accept_order.cli.app import COMMANDS, main

    found: list[tuple[str, list[str], bool]] = []
    for page in PAGES:
        for number, line, failing in _command_lines(page):
            for args in invocations(line):
                found.append((f"{page.relative_to(ROOT)}:{number}", args, failing))
    root = click.Context(main, info_name="accept-order")
    for name in COMMANDS:
        command = main.get_command(root, name)
        assert command is not None
        # a long example is continued shell-style (`\\` at the end of a line): one command again
        for example in (command.epilog or "").replace("\\\n", " ").splitlines():
            for args in invocations(example.strip()):
                found.append((f"accept-order {name} --help", args, False))
    return found


DOCUMENTED = documented()


def test_the_docs_document_commands() -> None:
    # the collection itself works: the README's first line, the tutorial and every command's examples
    where = {w.split(":")[0] for w, _, _ in DOCUMENTED}
    assert {"README.md", "docs/tutorial.md", "accept-order run --help"} <= where
    assert ["run", "--mode", "epoll"] in [args for _, args, _ in DOCUMENTED]


@pytest.mark.parametrize(("where", "args", "failing"), DOCUMENTED, ids=[w for w, _, _ in DOCUMENTED])
def test_documented_command_parses(where: str, args: list[str], failing: bool) -> None:
    if failing:
        # shown failing on purpose (a bad value, a device as --json): the command must still exist
        from accept_order.cli.app import COMMANDS

        assert not args or args[0].startswith("-") or args[0] in COMMANDS, f"{where}: no command {args[0]!r}"
        return
    try:
        parse(args)
    except click.ClickException as exc:
        pytest.fail(f"{where}: accept-order {shlex.join(args)}: {exc.format_message()}")


@pytest.mark.parametrize(
    "args",
    [["runn"], ["run", "--no-such-option"], ["run", "--workers", "0"], ["run", "--mode", "no-such-mode"]],
)
def test_parse_refuses_what_the_command_refuses(args: list[str]) -> None:
    with pytest.raises(click.ClickException):
        parse(args)


def test_invocations_find_accept_order_in_shell_lines() -> None:
    assert invocations("taskset -c 1 accept-order run -m reuseport-cpu -n 6 | sed -n 2p") == [
        ["run", "-m", "reuseport-cpu", "-n", "6"]
    ]
    assert invocations("accept-order inspect $(cat /tmp/web/nginx.pid) --json i.json > /dev/null") == [
        ["inspect", "12345", "--json", "i.json"]
    ]
    assert invocations("unshare -n sh -c 'ip link set lo up && accept-order run -w 1'") == [["run", "-w", "1"]]
    assert invocations("accept-order latency --repeat 5 2>/dev/null | tail -2") == [["latency", "--repeat", "5"]]
    assert invocations("accept-order serve --port 1024 > serve.out &") == [["serve", "--port", "1024"]]
    assert invocations("accept-order run --attach $server -n 3 2>&1") == [["run", "--attach", "12345", "-n", "3"]]


def test_regen_rewrites_a_block_in_place(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n<!-- regen -->\n```console\n$ printf 'one\\ntwo\\n'\nstale output\n$ accept-order --version\n"
        "```\n\nAfter.\n\n```console\n$ echo not marked\nleft alone\n```\n\n"
        "<!-- regen -->\n```pycon\n>>> 6 * 7\n0\n```\n"
    )
    failed = regen.regenerate(page, log=lambda line: None)
    text = page.read_text()
    assert failed == 0
    assert "$ printf 'one\\ntwo\\n'\none\ntwo\n$ accept-order --version\naccept-order, version " in text
    assert "stale output" not in text
    assert "$ echo not marked\nleft alone\n" in text  # an unmarked block is not run
    assert ">>> 6 * 7\n42\n```" in text
    assert text.startswith("# A page\n") and "\nAfter.\n" in text


def test_regen_blocks_name_known_setups() -> None:
    for page in PAGES:
        for block in regen.find_blocks(page):
            for name in filter(None, block.options.get("setup", "").split(",")):
                assert name in regen.SETUPS, f"{block.where}: no setup {name!r}"
            assert block.commands(), f"{block.where}: a regen block without a command"


NO_MKDOCS = importlib.util.find_spec("mkdocs") is None


@pytest.mark.skipif(NO_MKDOCS, reason="mkdocs is not installed (pip install '.[docs]')")
def test_site_builds_strict(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"), "-d", tmp_path],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    reference = (tmp_path / "reference" / "commands" / "index.html").read_text()
    from accept_order.cli.app import COMMANDS

    for name in COMMANDS:  # the reference is rendered from click: every command is in it
        assert f"accept-order {name}" in reference
