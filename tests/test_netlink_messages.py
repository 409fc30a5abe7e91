"""probes/netlink_messages.messages, the one walk over a netlink datagram that nat_rules, route_netns and
conntrack_entry each wrote: every message found at its aligned offset, its payload's bounds, and a length that
cannot be right said (MalformedReply), never read past or looped on."""

from __future__ import annotations

import pytest

from accept_order.probes.netlink_messages import NLMSGHDR, MalformedReply, messages


def _message(kind: int, seq: int, payload: bytes) -> bytes:
    """One message as the kernel sends it: its header, its payload, padded to 4 bytes (its length unpadded)."""
    head = NLMSGHDR.pack(NLMSGHDR.size + len(payload), kind, 0, seq, 0)
    return head + payload + b"\0" * (-len(payload) % 4)


def test_each_message_is_found_after_the_padding_of_the_one_before() -> None:
    data = _message(16, 1, b"abcde") + _message(3, 2, b"") + _message(24, 1, b"wxyz")
    found = list(messages(data))
    assert [(kind, seq) for kind, seq, _, _ in found] == [(16, 1), (3, 2), (24, 1)]
    assert [data[start:end] for _, _, start, end in found] == [b"abcde", b"", b"wxyz"]


@pytest.mark.parametrize("length", [NLMSGHDR.size - 1, 0, NLMSGHDR.size + 9])
def test_a_length_shorter_than_its_header_or_past_the_data_is_malformed(length: int) -> None:
    data = _message(24, 1, b"ok") + NLMSGHDR.pack(length, 24, 0, 2, 0) + b"abcd"
    walk = messages(data)
    assert next(walk)[:2] == (24, 1)  # the message before is still given
    with pytest.raises(MalformedReply):
        next(walk)


def test_a_malformed_reply_is_an_oserror_as_the_probes_catch_it() -> None:
    assert issubclass(MalformedReply, OSError)  # nat_rules' `except OSError: return None` takes it
