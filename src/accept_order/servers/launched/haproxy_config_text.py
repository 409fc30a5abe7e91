"""How HAProxy reads its config's text: which files its command line names, and the global section's
`tune.listener.multi-queue` and `nbthread` as its parser takes them.

HAProxy loads every `-f FILE` in order, and every argument after `--`; `-C DIR` changes directory before they are
loaded. A keyword set twice takes its last value, as HAProxy's parser does; `"${NAME}"` and `"${NAME-default}"` are
taken from the environment it was started with (inside double quotes only, as HAProxy expands them). A setting
inside a `.if` block is not decided here (its condition is HAProxy's to evaluate) and is said as such.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MULTI_QUEUE = "tune.listener.multi-queue"
NBTHREAD = "nbthread"
# the keywords that open a section (HAProxy 2.6's cfg_keywords and registered sections): a setting belongs to the
# last one opened
SECTIONS = frozenset(
    "global defaults frontend backend listen peers resolvers userlist mailers program http-errors ring cache "
    "fcgi-app log-forward".split()
)
# $NAME, ${NAME}, ${NAME-default} and ${NAME[*]} (the value's words, as one here: these settings take one)
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:-([^}]*))?(?:\[\*\])?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def config_names(argv: Sequence[str]) -> tuple[list[str], str | None]:
    """The config paths HAProxy's command line names, in its order (-f's, then those after `--`), and -C's
    directory (None: none given)."""
    names: list[str] = []
    chdir: str | None = None
    words = list(argv[1:])
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":
            names += words[i + 1 :]
            break
        if word in ("-f", "-C") and i + 1 < len(words):
            if word == "-f":
                names.append(words[i + 1])
            else:
                chdir = words[i + 1]
            i += 2
            continue
        i += 1
    return names, chdir


def global_settings(text: str, environ: dict[str, str] | None) -> tuple[dict[str, str], dict[str, str]]:
    """The global section's tune.listener.multi-queue and nbthread as written (the last of each), and those
    found where this reading cannot decide them (keyword -> why)."""
    found: dict[str, str] = {}
    unknown: dict[str, str] = {}
    section = ""
    conditional = 0
    for raw in text.splitlines():
        words = _words(raw, environ)
        if not words or words[0] is None:
            continue
        first = words[0]
        if first == ".if":
            conditional += 1
            continue
        if first == ".endif":
            conditional = max(0, conditional - 1)
            continue
        if first.startswith("."):
            continue  # .elif, .else, .diag, .notice, .warning, .alert: no setting
        if first in SECTIONS:
            section = first
            continue
        if section != "global" or first not in (MULTI_QUEUE, NBTHREAD) or len(words) < 2:
            continue
        value = words[1]
        if conditional:
            unknown[first] = "is set inside a .if block, whose condition HAProxy evaluates"
        elif value is None:
            unknown[first] = "is set from a variable its environment here does not give"
        else:
            found[first] = value
            unknown.pop(first, None)
    return found, unknown


def _words(line: str, environ: dict[str, str] | None) -> list[str | None]:
    """A config line's words as HAProxy 2.6's parse_line reads them: a `#` outside quotes ends it, quotes group, a
    backslash outside single quotes takes the next character as it is, and `$NAME`, `${NAME}`, `${NAME-default}`
    are taken from `environ` inside double quotes only (unquoted, HAProxy keeps them as written: 'nbthread ${T}'
    with T=3 failed its config check, "${T}" passed). A word is None where a variable in it is not in `environ`
    (it may be unreadable here, or set by the config's own setenv)."""
    words: list[str | None] = []
    word: list[str] = []
    known = True
    quote = ""
    in_word = False
    i = 0
    while i < len(line):
        char = line[i]
        if quote == "'":
            if char == quote:
                quote = ""
            else:
                word.append(char)
        elif char == "\\" and i + 1 < len(line):
            word.append(line[i + 1])
            in_word = True
            i += 1
        elif quote == '"' and char == "$" and (match := _VARIABLE.match(line, i)):
            name, default = match.group(1) or match.group(3), match.group(2)
            if environ is not None and name in environ:
                word.append(environ[name])
            elif default is not None and environ is not None:
                word.append(default)  # the default replaces a variable not set, not an empty one
            else:
                known = False
            i = match.end() - 1
        elif quote == '"' and char == quote:
            quote = ""
        elif not quote and char in ('"', "'"):
            quote, in_word = char, True
        elif not quote and char == "#":
            break
        elif not quote and char.isspace():
            if in_word:
                words.append("".join(word) if known else None)
                word, known, in_word = [], True, False
        else:
            word.append(char)
            in_word = True
        i += 1
    if in_word:
        words.append("".join(word) if known else None)
    return words
