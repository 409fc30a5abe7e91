"""The netlink messages in one datagram the kernel sent, for the probes that ask it one thing at a time (nfnetlink's
nat chains, ctnetlink's one entry, rtnetlink's route and namespace ids): each message's header read and its length
checked against what was received before its payload is used, as NLMSG_OK and NLMSG_NEXT do in C.

netlink_diag.py and tcp_info.py keep a loop of their own: a dump of 47,000 sockets goes through theirs, where a
generator's step per message would count."""

from __future__ import annotations

import struct
from collections.abc import Iterator

NLMSGHDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
NLMSG_ERROR, NLMSG_DONE = 2, 3


class MalformedReply(OSError):
    """A message whose length is shorter than its header or runs past what was received."""


def messages(data: bytes) -> Iterator[tuple[int, int, int, int]]:
    """Each message in `data`: (its type, its sequence number, the start and end of its payload in `data`, not
    copied). MalformedReply where a length cannot be right (what follows it cannot be found)."""
    offset = 0
    while offset + NLMSGHDR.size <= len(data):
        length, kind, _flags, seq, _pid = NLMSGHDR.unpack_from(data, offset)
        if length < NLMSGHDR.size or offset + length > len(data):
            raise MalformedReply(f"a netlink message of length {length} at {offset} of {len(data)} bytes")
        yield kind, seq, offset + NLMSGHDR.size, offset + length
        offset += (length + 3) & ~3  # NLMSG_ALIGN
