"""Review RG of 00c6032: the hello digests only the folders the coordinator compares, not the whole package. Every
hello (each load step of a host kept between loads too) read and hashed all 332 source files (2 MB) for the four
folders a part is ever compared on; and a part in a folder the host does not digest would silently go unchecked."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from accept_order.loads.hosts import gateways, remote_side

PACKAGE = Path(gateways.PACKAGE)


class _Channel:
    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send(self, message: Any) -> None:
        self.sent.append(message)


def test_the_hello_digests_the_compared_folders_alone() -> None:
    channel = _Channel()
    assert remote_side._hello(channel)
    (hello,) = channel.sent
    assert hello[0] == "hello" and set(hello[6]) == set(remote_side.DIGESTED), hello[6].keys()


def _parts() -> list[str]:
    """The modules of the package a host can be asked to take (those defining take_part), by dotted name."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.FunctionDef) and node.name == "take_part" for node in tree.body):
            found.append(".".join((PACKAGE.name, *path.relative_to(PACKAGE).with_suffix("").parts)))
    return found


def test_every_folder_the_coordinator_compares_is_one_the_host_digests() -> None:
    parts = _parts()
    assert "accept_order.loads.hosts.load_side" in parts and "accept_order.experiments.observe.remote_side" in parts
    own = gateways.own_sources(remote_side.DIGESTED)
    assert set(own) == set(remote_side.DIGESTED), "a digested folder without sources here"
    for part in parts:
        # a host whose every digested folder differs: whatever the part needs and the host does not digest is missed
        theirs = {folder: "other" for folder in remote_side.DIGESTED}
        compared = set(gateways.unlike_sources(theirs, part))
        needed = {*gateways.MATCHED, part.removeprefix("accept_order.").rpartition(".")[0].replace(".", "/")}
        assert needed <= compared, (part, needed - compared)
