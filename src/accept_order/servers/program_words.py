"""The words of the program a command line runs (servers/registry.py `recognise` names a running server's kind by
them): its first argument's base name, and where that is an interpreter, what it runs (its module, code or script);
a wrapper's (Server::Starter's) command after `--` is read again by the caller."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

# Server::Starter: h2o's `-m master` (Debian's unit) runs `perl -x .../start_server ... -- /usr/bin/h2o`
WRAPPERS = frozenset({"start_server"})


def words(text: str) -> set[str]:
    # Base names only: a directory that happens to be called "node" (/home/node/app.py) names no server
    return {re.sub(r"[^\w.-]", "", os.path.basename(word)) for word in text.split()}


def program_words(args: Sequence[str]) -> set[str]:
    """The words of the program a command line runs: its first argument's, and an interpreter's module (-m),
    code (-c, -e) or script (its first argument that is no option)."""
    if not args:
        return set()
    own = words(args[0])
    interpreter = re.fullmatch(r"(python|pypy|ruby|perl)[\d.]*", os.path.basename(args[0]))
    if interpreter is None:
        return own
    # the options that take the next argument as their value (python -X dev, ruby -r bundler/setup), each
    # interpreter's own: python's -I takes none (isolated: `python3 -I /usr/bin/gunicorn` was no gunicorn)
    takes_value = {"ruby": ("-r", "-I", "-C", "-E"), "perl": ("-I",)}.get(interpreter[1], ("-W", "-X"))
    rest = list(args[1:])
    valued = False  # the argument is an option's value
    for index, arg in enumerate(rest):
        if arg in ("-m", "-c", "-e"):
            return own | words(" ".join(rest[index + 1 : index + 2]))
        if arg.startswith("-m"):  # python -mgunicorn
            return own | words(arg[2:])
        if not arg.startswith("-") and not valued:
            return own | words(arg)
        valued = arg in takes_value
    return own
