"""What the kernel's announcements of closes gave observe's load (load.py, probes/tcp_destroy.py), in the
verdict's words. Pure: a result in, sentences out. A result from before them, or where they were not read
(a note says why), gets none of these sentences."""

from __future__ import annotations

from ...core.text import plural
from ...probes.tcp_destroy import SHARE
from .result import ObserveResult


def _many(count: int, word: str) -> str:
    """`1 connection`, `6,693 connections`."""
    return plural(count, word, grouped=True)


def _pct(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def closes(result: ObserveResult, received: list[int]) -> list[str]:
    """The closes counted to the byte, the connections closed before any look (counted, in no worker's
    share), the announcements the kernel dropped, and those not read for the reader's CPU budget."""
    if result.closes_counted is None:
        return []
    lines = []
    if result.closes_counted:
        lines.append(
            f"{_many(result.closes_counted, 'connection')} closed while observed: each one's bytes are counted to "
            "its close (the kernel announces each socket it frees with its final counters)"
        )
    if result.closed_unlooked:
        apart = result.closed_unlooked_bytes_in or 0
        they = "it" if result.closed_unlooked == 1 else "they"
        are = "is" if apart == 1 else "are"
        # tcpi_bytes_received counts a FIN as the byte of sequence space it takes: wrk's first connection, which
        # sends nothing and closes, read 'the 1 byte it received' (ss -tni of such a socket: bytes_received:1)
        fins = min(apart, result.closed_unlooked)
        lines.append(
            f"{_many(result.closed_unlooked, 'connection')} opened and closed between two looks: the "
            f"{_many(apart, 'byte')} {they} received ({_pct(apart, sum(received) + apart)} of all) {are} counted "
            "but in no worker's share (an announcement does not say which process held the socket)"
            + (
                f"; the kernel counts a FIN received as a byte, so {'that byte' if apart == 1 else f'{fins:,} of them'}"
                f" may be {'a close' if fins == 1 else 'closes'}, not data"
                if fins
                else ""
            )
        )
    if result.closes_late:
        late, one = result.closes_late, result.closes_late == 1
        received_late = _many(result.closes_late_bytes_in or 0, "byte")
        lines.append(
            f"{_many(late, 'connection')} no look saw {'was' if one else 'were'} announced closed only after the "
            f"last look, while observe settled: left out of the counts with the {received_late} "
            f"{'it' if one else 'they'} received ({'it' if one else 'each'} may have closed in the window's last "
            "moments or after it)"
        )
    if result.closes_lost:
        lines.append(
            f"the kernel dropped {_many(result.closes_lost, 'announcement')} of a close (the buffer was full): "
            "those connections' bytes after their last look are not counted"
        )
    if result.closes_skipped:
        lines.append(
            f"{_many(result.closes_skipped, 'announcement')} of a close not read, to keep reading them within "
            f"{SHARE * 100:g}% of one CPU: those connections' bytes are counted only to their last look (not at all "
            "where no look saw one)"
        )
    return lines


def unseen_bytes(result: ObserveResult, unseen: int = 2) -> str:
    """Where the bytes of the `unseen` connections no look saw are: nowhere, or (announced) in the one worker's
    share, or apart, in no worker's."""
    their, closes = ("its", "its close") if unseen == 1 else ("their", "their closes")
    if result.closes_counted is None:
        return f"{their} bytes are not in the shares"
    if len(result.workers) == 1:
        return f"{their} bytes are in the worker's share, from the kernel's announcements of {closes}"
    return f"{their} bytes are counted apart (below), in no worker's share"
