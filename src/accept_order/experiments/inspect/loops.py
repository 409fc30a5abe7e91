"""A busy thread's loop, read from the epolls its process registered the listeners in, not from the instant's wait.

A process whose threads each run their own event loop (HAProxy's nbthread, h2o's threads) has one epoll per
thread watching the listener. A thread busy serving at a sample waits in no call, and /proc does not say which of
its process's epolls is its own: resolve (sample.py) leaves it 'running', outside the workers. Under keep-alive
load most threads are busy at most samples: HAProxy with 4 threads under wrk read 2, 3 or 4 workers, and at times
no worker and no mechanism, though its 4 epolls watched the listener all along. Here a running thread is given the
epoll it was seen waiting in at another sample of the look, or else, by elimination, one of its process's epolls
that watch a listener and that no thread of the look waits in: a thread whose epoll watches the listener is a
worker whatever it is doing at the look.

That holds where each thread runs a loop (HAProxy's threads, h2o's loops: their kinds say so, and a server this tool
does not know is taken to). uWSGI's --threads each have an epoll that watches the listener too, but take a mutex
of their process before they wait in it: one thread of a process waits, its others serve or sleep on the mutex
(idle: 1 in epoll_wait, 3 in futex). Given their epolls while busy, 2 processes of 4 threads under wrk read 3 to 5
workers in every look, where one a process takes part. A process with several such epolls is read so only where its
threads are loops; one with a single one is at most one worker, as resolve reads a busy main thread."""

from __future__ import annotations

from dataclasses import replace

from ...analysis.mechanism_values import Seen
from ...probes.file_table import polls_of
from .sample import Sample


def _raw_keys(sample: Sample) -> dict[tuple[str, int], str]:
    """(epoll id after kcmp, pid) -> the first "pid:fd" of that process named so: one pass over the sample's names
    (asked of each thread, a scan each was 3 ms of a 31 ms look at an idle 64-worker nginx)."""
    found: dict[tuple[str, int], str] = {}
    for raw, named in sample.same_epoll.items():
        found.setdefault((named, int(raw.partition(":")[0])), raw)
    return found


def _epoll_key(seen: Seen, raws: dict[tuple[str, int], str]) -> str | None:
    """The "pid:fd" of the epoll a waiting thread waits in, as its own process numbers it (before kcmp renamed it)."""
    if seen.epoll_id is None:
        return None
    return raws.get((seen.epoll_id, seen.pid), seen.epoll_id)


def _registered(sample: Sample, pid: int, listeners: frozenset[int]) -> dict[str, Seen]:
    """The process's epolls that watch a listener, by "pid:fd", each as a Seen of a thread that runs its loop."""
    found: dict[str, Seen] = {}
    for file in polls_of(sample.files.get(pid, {})):
        if file.kind != "eventpoll":
            continue
        watches = file.watching(listeners)
        if watches:
            key = f"{pid}:{file.fd}"
            found[key] = Seen(
                pid,
                0,
                "running",
                "epoll",
                listeners=frozenset(w.inode for w in watches),
                exclusive=all(w.exclusive for w in watches),
                exclusive_on=frozenset(w.inode for w in watches if w.exclusive),
                epoll_id=sample.same_epoll.get(key, key),
            )
    return found


def with_registered_loops(taken: list[Sample], listeners: frozenset[int], loops: bool = True) -> list[Sample]:
    """Each sample with the running threads of a many-threaded process taken for the waiters of their own epolls
    (see the module's docstring); a sample with none such is returned as it was. `loops`: whether each thread of
    the server's kind runs a loop of its own; if not, a process with several epolls on a listener is left as read."""
    if not any(_busy_threads(sample) for sample in taken):
        return taken  # nothing to give (an nginx, busy or not: one thread a process)
    # which epoll each thread was seen waiting in, at any sample of the look
    own: dict[tuple[int, int], str] = {}
    for sample in taken:
        raws = _raw_keys(sample)
        for s in sample.seen:
            key = _epoll_key(s, raws) if s.via == "epoll" and s.call != "running" else None
            if key is not None:
                own.setdefault(s.unit, key)
    owned = set(own.values())
    return [_one_sample(sample, listeners, own, owned, loops) for sample in taken]


def _one_sample(
    sample: Sample, listeners: frozenset[int], own: dict[tuple[int, int], str], owned: set[str], loops: bool
) -> Sample:
    busy = _busy_threads(sample)
    if not busy:
        return sample
    raws = _raw_keys(sample)
    waited = {_epoll_key(s, raws) for s in sample.seen if s.via == "epoll"}
    given: dict[tuple[int, int], Seen] = {}
    for pid in sorted({s.pid for s in busy}):
        epolls = _registered(sample, pid, listeners)
        if len(epolls) > 1 and not loops:
            continue  # threads that take turns at their epolls (uWSGI's mutex): the waiting one alone is a worker
        free = [key for key in sorted(epolls) if key not in waited and key not in owned]
        for s in sorted((s for s in sample.seen if s.pid == pid and s.via == "running"), key=lambda s: s.tid):
            key = own.get(s.unit)
            if key is None and free:
                key = free.pop(0)  # by elimination: an epoll of the process no thread of the look waits in
            if key is not None and key in epolls and key not in waited:
                waited.add(key)
                given[s.unit] = replace(epolls[key], tid=s.tid, holds=s.holds, wchan=s.wchan)
    if not given:
        return sample
    return replace(sample, seen=tuple(given.get(s.unit, s) for s in sample.seen))


def _busy_threads(sample: Sample) -> list[Seen]:
    """The sample's running threads that resolve left outside the workers, of processes of several threads."""
    return [s for s in sample.seen if s.via == "running" and len(sample.waits.get(s.pid, ())) > 1]
