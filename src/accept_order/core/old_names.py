"""Old field names kept working: a result file or a Python caller that still uses a field's name from
before it was renamed (a class's `RENAMED`: old name -> new name)."""

from __future__ import annotations

from typing import Any


def renamed(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """`data` with the old names of `cls`'s renamed fields replaced by the new ones (the new name wins)."""
    renames: dict[str, str] = getattr(cls, "RENAMED", {})
    if not any(old in data for old in renames):
        return data
    out = {k: v for k, v in data.items() if k not in renames}
    for old, new in renames.items():
        if old in data and new not in out:
            out[new] = data[old]
    return out


def _renamed_arguments(cls: type, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments with old names replaced; both names at once is a mistake, not a choice."""
    for old, new in getattr(cls, "RENAMED", {}).items():
        if old in kwargs and new in kwargs:
            raise TypeError(f"{cls.__name__}() got both {old}= and {new}= (its old and its new name)")
    return renamed(cls, kwargs)


def accept_old_names(cls: Any) -> None:
    """Let `cls(old_name=...)` keep working for the Python API after a field was renamed."""
    init = cls.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **_renamed_arguments(cls, kwargs))

    __init__.__doc__ = init.__doc__
    cls.__init__ = __init__
