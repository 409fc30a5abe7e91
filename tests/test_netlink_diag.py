"""NETLINK_SOCK_DIAG's names and its dump loop have one home, probes/netlink_diag.py: owner.py and unix_peers.py
imported listeners.py's private layouts (_NLMSGHDR, _SOCKID_BE, ...) and kept message loops of their own; the
unix_diag dump now goes through the same loop as the listeners' and the socket count's."""

from __future__ import annotations

import ast
import os
import socket
from pathlib import Path

import pytest

import accept_order
from accept_order.probes import netlink_diag, unix_peers
from accept_order.probes.unix_peers import unix_peers as peers_of_this_namespace

PACKAGE = Path(accept_order.__file__).parent
HOMES = ("listeners", "netlink_diag")  # the modules whose names the netlink probes share
HOMES = ("listeners", "netlink_diag")  # the modules whose names the netlink probes share
LINUX = pytest.mark.skipif(getattr(socket, "AF_NETLINK", None) is None, reason="netlink is Linux's")


def test_no_module_borrows_the_netlink_modules_private_names() -> None:
    borrowed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").rsplit(".", 1)[-1] in HOMES:
                private = [a.name for a in node.names if a.name.startswith("_")]
                if private:
                    borrowed.append(f"{path.relative_to(PACKAGE)}: {private}")
    assert not borrowed, borrowed


def _inode(sock: socket.socket) -> int:
    return os.stat(f"/proc/self/fd/{sock.fileno()}").st_ino


@LINUX
def test_the_unix_dump_pairs_both_ends_of_a_socketpair() -> None:
    one, other = socket.socketpair()
    with one, other:
        peers = peers_of_this_namespace()
        assert peers[_inode(one)] == _inode(other) and peers[_inode(other)] == _inode(one)


@LINUX
def test_the_unix_dump_reads_its_replies_through_the_shared_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """One loop over a dump's replies: unix_peers asks diag_messages, as the listeners and the state count do."""
    asked: list[int] = []
    shared = netlink_diag.diag_messages

    def counted(sock: socket.socket, request: bytes, seq: int, bufsize: int = netlink_diag.RECV_BUFSIZE):  # type: ignore[no-untyped-def]
        asked.append(seq)
        return shared(sock, request, seq, bufsize)

    monkeypatch.setattr(unix_peers, "diag_messages", counted)
    one, other = socket.socketpair()
    with one, other:
        assert peers_of_this_namespace()[_inode(one)] == _inode(other)
    assert asked == [1]
