"""What the tests of result files share (test_result_output_path, _writes, _reads, _escapes, _file_schema): a document
to write, a hostile file name, the mark for tests that need /dev, a folder's entries, and the check that a refusal
is one printable line."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from accept_order.core.errors import AcceptOrderError

DOC: dict[str, Any] = {"schema": "accept-order", "version": 1, "kind": "run", "records": [1, 2.5, None]}
HOSTILE = "evil\x1b]0;pwned\x07\x1b[2J\n.json"

needs_dev = pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/null, /dev/zero")


def one_line(exc: pytest.ExceptionInfo[AcceptOrderError]) -> str:
    """The error's message, after checking it is one line with no control characters at all."""
    message = str(exc.value)
    assert message
    assert not [c for c in message if unicodedata.category(c) in ("Cc", "Cs")], repr(message)
    return message


def entries(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))
