"""observe of HAProxy reads tune.listener.multi-queue (and nbthread) from its config while it runs, as inspect does.

Its verdict said 'these are the threads' accepts, not necessarily the connections each serves: HAProxy hands each
accepted connection to the less loaded of two threads unless its config turns tune.listener.multi-queue off', and a
note that the accepting thread 'is not always the one that serves', under inspect's line saying none is handed on,
for Debian's HAProxy 2.6 started by hand with 'tune.listener.multi-queue off' (nbthread 4, wrk -c8 -H 'Connection:
close', 30,210 connections; bpftrace's accept4 returns by thread equal to the threads the replies named, 2/105/36/57
of 200 curl-like requests). observe now reads the config as the server runs, saves the reading with the result
('handoff'), and says the thread that accepts a connection serves it, with the file; `show` of the saved file says
the same. The witness is the kernel's: each thread's accepts, as observe's bpftrace counted them, equal the requests
the replies say it served (skipped, with the reason, where bpftrace cannot count)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from conftest import run_cli
from haproxy_by_hand import ask, config, haproxy
from observed_under import observed_under

from accept_order.experiments.documents import save
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import verdict
from accept_order.servers.launched.base import free_port
from accept_order.servers.launched.haproxy_config import Settings, handoff_read, why_said
from accept_order.servers.launched.haproxy_config_files import START_SLACK_S
from accept_order.servers.launched.haproxy_config_text import MULTI_QUEUE, NBTHREAD

REQUESTS = 100
OFF_LINE = "the thread that accepts a connection serves it: its config ({path}) turns tune.listener.multi-queue off"
HANDED_ON = "not necessarily the connections each serves"


def observed(process: subprocess.Popen[bytes], port: int) -> tuple[ObserveResult, Counter[int]]:
    """observe of the server while REQUESTS requests are sent, each on a connection of its own, once observe has
    started (its first snapshot); it ends when they are answered. The requests each thread served, by thread id."""
    tids = sorted(int(t) for t in os.listdir(f"/proc/{process.pid}/task"))  # thread ids in creation order
    served: Counter[int] = Counter()
    result = observed_under(lambda: served.update(tids[ask(port)] for _ in range(REQUESTS)), pid=process.pid)
    if not result.traced:
        pytest.skip(f"no kernel count of who accepts: {result.source}")
    return result, served


def test_multi_queue_off_is_read_and_the_thread_that_accepts_serves(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, "    tune.listener.multi-queue off"))
    with haproxy(path, port) as process:
        result, served = observed(process, port)
    lines = verdict(result)
    said = "\n".join([*lines, *result.notes])
    assert OFF_LINE.format(path=path) + ", so none is handed on" in lines, lines
    assert HANDED_ON not in said and "less loaded" not in said, said
    # what a thread took, it serves; a headline naming none ('the 4 workers shared 100 connections unevenly: 7% to
    # 35% each', 1 run in 8 here) has neither word
    assert " accepted " not in lines[0], lines[0]
    assert result.handoff is not None and result.handoff.hands_on is False, result.handoff
    # the kernel's witness: each thread's accepts are the connections it served, as its replies say
    assert {w.tid: w.accepts for w in result.workers if w.accepts} == dict(served), (result.workers, served)
    # the saved file says the same without the server (gone now)
    saved = tmp_path / "observe.json"
    save(str(saved), "observe", result)
    shown = run_cli(["show", str(saved)], columns=1000)
    assert shown.exit_code == 0, shown.output
    assert OFF_LINE.format(path=path) + ", so none is handed on" in shown.stdout, shown.stdout
    assert HANDED_ON not in shown.stdout, shown.stdout


def test_by_default_the_hand_off_is_said_as_the_config_leaves_it(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, ""))
    with haproxy(path, port) as process:
        result, _ = observed(process, port)
    lines = verdict(result)
    assert any(
        line.startswith(f"these are the threads' accepts, {HANDED_ON}")
        and f"as its config ({path}) leaves tune.listener.multi-queue at HAProxy's default, on" in line
        for line in lines
    ), lines
    assert json.loads(json.dumps(result.to_dict()))["handoff"]["hands_on"] is True


def test_a_config_changed_since_it_started_is_not_taken_as_what_it_runs(tmp_path: Path) -> None:
    """Started with multi-queue on, its file then turned it off (not reloaded): it still hands on (by hand, 100
    connections: accepted 53/4/21/22, served 25/26/25/24 as its replies said), so observe says the hand-off beside
    the file's word and the change, and a thread's accepts are not called what it took (43a4df1 said 'the thread
    that accepts a connection serves it ... so none is handed on' and 'worker 0 took 53%')."""
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port, ""))
    with haproxy(path, port) as process:
        path.write_text(config(port, "    tune.listener.multi-queue off"))
        edited = time.time() + 5  # the edit as the kernel dates it: 5 s after the start, with no wait for the clock
        os.utime(path, (edited, edited))
        result, _ = observed(process, port)
    lines = verdict(result)
    assert result.handoff is not None and result.handoff.hands_on is None, result.handoff
    changed = (
        f"changed after the newest of its processes started, so what it runs may differ until it is reloaded: {path}"
    )
    assert any(
        line.startswith(f"these are the threads' accepts, {HANDED_ON}")
        and f"(not visible in /proc; its config ({path}) turns tune.listener.multi-queue off; {changed})" in line
        for line in lines
    ), lines
    assert not any(line.startswith("the thread that accepts") for line in lines), lines
    assert " took " not in lines[0], lines[0]
    assert any("is not always the one that serves" in note for note in result.notes), result.notes


def test_a_config_renamed_over_it_since_it_started_is_not_taken_as_what_it_runs(tmp_path: Path) -> None:
    """Started with multi-queue on, its file then replaced by one turning it off whose mtime is an hour older ('mv',
    'cp -p', a package's conffile keep theirs): it still hands on (by hand: accepted 30/17/23/30 of 100, served
    24/26/28/22), and the file's mtime said nothing of it (43a4df1: 'the thread that accepts a connection serves
    it ... so none is handed on', no doubt at all). Its ctime is the rename's."""
    port = free_port("127.0.0.1")
    path, replacement = tmp_path / "haproxy.cfg", tmp_path / "haproxy.cfg.new"
    path.write_text(config(port, ""))
    replacement.write_text(config(port, "    tune.listener.multi-queue off"))
    hour_ago = time.time() - 3600
    os.utime(replacement, (hour_ago, hour_ago))
    with haproxy(path, port) as process:
        # its ctime cannot be set: the rename is dated past its start by the clock, beyond the START_SLACK_S the
        # start is given (its /proc tick and uptime), where a rename sooner is not told from one before the start
        time.sleep(3 * START_SLACK_S)  # a clock to pass, not another process to wait for
        os.replace(replacement, path)
        result, _ = observed(process, port)
    assert result.handoff is not None and result.handoff.hands_on is None, result.handoff
    changed = (
        f"changed after the newest of its processes started, so what it runs may differ until it is reloaded: {path}"
    )
    assert result.handoff.doubts == (changed,), result.handoff.doubts
    assert not any(line.startswith("the thread that accepts") for line in verdict(result)), verdict(result)


def test_a_setting_in_a_block_not_decided_here_is_not_taken_as_what_it_runs(tmp_path: Path) -> None:
    """Off, then a .if block turning it on whose condition holds (MQ_ON=1): HAProxy hands on (by hand: accepted
    13/24/27/36 of 100, served 24/26/28/22), so the block's doubt leaves the hand-off unknown (43a4df1 said 'the
    thread that accepts a connection serves it ... so none is handed on; its ... is set inside a .if block')."""
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    block = ".if defined(MQ_ON)\n    tune.listener.multi-queue on\n.endif"
    path.write_text(config(port, f"    tune.listener.multi-queue off\n{block}"))
    with haproxy(path, port, env={**os.environ, "MQ_ON": "1"}) as process:
        result, _ = observed(process, port)
    lines = verdict(result)
    assert result.handoff is not None and result.handoff.hands_on is None, result.handoff
    block_said = "is set inside a .if block, whose condition HAProxy evaluates: taken as the one before it"
    assert any(
        line.startswith(f"these are the threads' accepts, {HANDED_ON}")
        and f"(not visible in /proc; its config ({path}) turns tune.listener.multi-queue off; its "
        f"tune.listener.multi-queue {block_said}"
        in line
        for line in lines
    ), lines
    assert not any(line.startswith("the thread that accepts") for line in lines), lines


def test_a_changed_file_leaves_the_hand_off_unknown_whatever_it_says() -> None:
    """Each reading of a file changed since the start is not known (hands_on None), its words kept."""
    for multi_queue, nbthread in ((False, 4), (None, 1), (True, 4)):
        read = handoff_read(Settings(multi_queue, nbthread, ("/h.cfg",), (), (), ("/h.cfg",)))
        assert read.hands_on is None and read.said.startswith("its config (/h.cfg) "), read
        assert read.doubts[-1].startswith("changed after the newest of its processes started"), read
    assert handoff_read(Settings(False, 4, ("/h.cfg",), ())).hands_on is False
    block = "is set inside a .if block, whose condition HAProxy evaluates"
    # undecided: the setting the answer rests on; an undecided nbthread leaves multi-queue off as it is
    assert handoff_read(Settings(False, 4, ("/h.cfg",), (), ((MULTI_QUEUE, block),))).hands_on is None
    assert handoff_read(Settings(None, 1, ("/h.cfg",), (), ((NBTHREAD, block),))).hands_on is None
    assert handoff_read(Settings(False, None, ("/h.cfg",), (), ((NBTHREAD, block),))).hands_on is False
    # a file not read may set it after the one that was (by hand: a later -f file turning it on, deleted since)
    unread = Settings(False, 4, ("/a.cfg",), (("/b.cfg", "no such file or directory"),))
    assert handoff_read(unread).hands_on is None and handoff_read(unread).doubts[-1].startswith("not read here"), unread


def test_a_config_named_with_a_newline_is_said_on_one_line() -> None:
    """'haproxy -f $'/tmp/odd\\nline.cfg'': observe's line (and inspect's) broke in two at the name's newline, where
    `show` of the saved file, which escapes what it reads, printed '\\n': both now say the name escaped."""
    odd = "/tmp/odd\nline.cfg"
    for settings in (
        Settings(False, 4, (odd,), ()),
        Settings(None, 4, (odd,), (), (), (odd,)),
        Settings(None, None, (), ((odd, "permission denied"),)),
        Settings(False, 4, ("/h.cfg",), ((odd, "permission denied"),)),
    ):
        read = handoff_read(settings)
        said = "; ".join([read.said, *read.doubts, why_said("a herd; handed on", settings)])
        assert "\n" not in said and "/tmp/odd\\nline.cfg" in said, said


DATA = Path(__file__).parent / "data" / "observe_haproxy_threads_kept.json"  # observe of HAProxy 2.6, before the field
OLD_LINE = (
    "these are the threads' accepts, not necessarily the connections each serves: HAProxy hands each accepted "
    "connection to the less loaded of two threads unless its config turns tune.listener.multi-queue off (not visible "
    "in /proc), and which thread serves it is not counted here (the load is per process: see the note)"
)


def shown_with(tmp_path: Path, handoff: object) -> str:
    """`show` of the saved HAProxy observation, with `handoff` as its saved reading of the config."""
    path = tmp_path / "observe.json"
    path.write_text(json.dumps({**json.loads(DATA.read_text()), "handoff": handoff}))
    shown = run_cli(["show", str(path)], columns=1000)
    assert shown.exit_code == 0, shown.output
    return str(shown.stdout)


def test_a_file_from_before_the_reading_says_what_it_said() -> None:
    result = ObserveResult.from_dict(json.loads(DATA.read_text()))
    assert result.handoff is None and "handoff" not in result.to_dict()  # saved again as it was
    assert verdict(result)[1] == OLD_LINE
    shown = run_cli(["show", str(DATA)], columns=1000)
    assert shown.exit_code == 0 and OLD_LINE in shown.stdout, shown.output


def test_a_saved_reading_that_turns_it_off_is_said_by_show_with_its_doubts(tmp_path: Path) -> None:
    changed = "changed after the newest of its processes started, so what it runs may differ until it is reloaded: /x"
    said = "its config (/etc/haproxy/haproxy.cfg) turns tune.listener.multi-queue off"
    out = shown_with(tmp_path, {"hands_on": False, "said": said, "doubts": [changed]})
    assert f"the thread that accepts a connection serves it: {said}, so none is handed on; {changed}" in out, out
    assert "worker 3 (thread 15685) took 89% of 9 connections" in out and HANDED_ON not in out, out


def test_a_config_not_read_is_said_beside_the_default(tmp_path: Path) -> None:
    said = "its config could not be read here: /etc/haproxy/haproxy.cfg (permission denied)"
    out = shown_with(tmp_path, {"hands_on": None, "said": said, "doubts": []})
    assert OLD_LINE.replace("(not visible in /proc)", f"(not visible in /proc; {said})") in out, out


def test_a_reading_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "observe.json"
    path.write_text(json.dumps({**json.loads(DATA.read_text()), "handoff": {"hands_on": "off", "said": "x"}}))
    shown = run_cli(["show", str(path)], columns=1000)
    assert shown.exit_code == 1 and "handoff" in shown.stderr and len(shown.stderr.splitlines()) == 1, shown.output
