"""Why a host refuses the run before any load because of the Python it runs: no accept-order for it, a Python
older than accept-order needs (remote_side's hello says its version), or one too old for execnet's own bootstrap,
which fails before the hello with a SyntaxError on stderr."""

from __future__ import annotations

import shlex

from ...core.text import escape_controls as inert
from ...core.version import VERSION
from .remote_side import MIN_PYTHON

NEEDED = ".".join(map(str, MIN_PYTHON))
EXECNET_OLDEST = "3.8"  # execnet 2's requires-python: an older interpreter cannot parse its bootstrap


def refusal(name: str, hello: tuple[object, ...]) -> str | None:
    """The error line for a hello that says the host cannot run accept-order, or None (a hello to check further)."""
    if hello[0] == "old":
        return (
            f"{name}: its Python {inert(str(hello[2]))} is {inert(str(hello[1]))}, and accept-order needs "
            f"{NEEDED} or newer: give --client-python one that is, with accept-order {VERSION}"
        )
    if hello[0] == "missing":
        return (
            f"{name}: accept-order is not installed for {inert(str(hello[2]))} there "
            f"({inert(str(hello[1]))}); install accept-order {VERSION} there, or give --client-python"
        )
    return None


def not_started(python: str | None, said: str | None) -> str:
    """What to say of a host whose Python never said hello, given the last line it (or ssh) wrote. A SyntaxError is
    a Python that started and could not parse the bootstrap execnet sent it: one older than execnet runs on."""
    its = f"its Python {inert(python)}" if python is not None else "its Python"
    if said is not None and said.startswith("SyntaxError"):
        return (
            f"{its} could not parse execnet's bootstrap ({said}): a Python older than {EXECNET_OLDEST}, and "
            f"accept-order needs {NEEDED} or newer: give --client-python one that is"
        )
    return f"{its} did not start or answer" + (f" ({said})" if said else "")


def spoke_first(destination: str, ssh_config: str | None, python: str | None) -> str:
    """What to say of a host whose ssh session wrote something before execnet's Python answered: execnet reads one
    byte, its Python's '1', and fails on any other. A login shell or startup file that prints there (a ~/.bashrc's
    echo, an account whose shell is nologin, which says 'This account is currently not available.') does that, as
    does a --client-python that prints first (a wrapper script): the command to try is the tool's own ssh (its
    --ssh-config) starting that Python, or 'ssh c1 true' reads another config and runs no --client-python."""
    ssh = f"ssh -F {shlex.quote(ssh_config)}" if ssh_config is not None else "ssh"
    run = f"{shlex.quote(python)} -c pass" if python else "true"
    who = "or an account with no shell"
    if python:
        who = "an account with no shell, or a --client-python that prints first"
    return (
        "its ssh session wrote something else before Python answered (a login shell or startup file that prints, "
        f"as a ~/.bashrc may, {who}): '{inert(f'{ssh} {destination} {run}')}' must print nothing"
    )
