"""How to install an optional extra, said the way that works where the tool came from.

An extra is `pip install 'accept-order[plot]'` from PyPI, `pip install '.[plot]'` from a clone; a clone
is how the README's set-up lines install the tool, where the first alone fails. Every hint names both.
"""

from __future__ import annotations


def pip_install(extra: str, what: str = "") -> str:
    """`pip install 'accept-order[plot]' (from a clone: pip install '.[plot]')`; `what`: the package the
    extra brings that is missing or too old, e.g. `gunicorn>=23`."""
    package = f" ({what})" if what else ""
    return f"pip install 'accept-order[{extra}]'{package}, or from a clone: pip install '.[{extra}]'"
