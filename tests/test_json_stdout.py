"""`--json -`: the result's JSON on stdout (click.File's convention), in place of the report, for jq. Before, every
command that takes --json wrote a file named '-' in the working directory and printed the report as ever.

What a user relies on: stdout holds the JSON and nothing else (the document a file would hold, byte for byte, which
`show` reads back); no file named '-' is made; notes and errors stay on stderr; and a write is complete or reported:
a reader gone before it took everything (`| head -c 10`) is one line naming the file the result is kept in, and the
status 141 a report's reader going away gets (not quiet: the result is not where its user looks); a closed or full
stdout is one line and exit 1; never a traceback. A JSON the empty pipe holds is all written in one write, so a
reader that peeks (`| head -c 100`) and goes is a success, as it is for `cat result.json | head -c 100`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from conftest import OutputReader, run_cli
from unread_stdout import SCRIPT_ARGS, SCRIPTS, UnreadStdout

from accept_order.cli import result_stdout
from accept_order.cli.app import COMMANDS, main
from accept_order.cli.common import report_and_save
from accept_order.core.status import ExitStatus
from accept_order.experiments import EXPERIMENTS, find
from accept_order.experiments.documents import load, save

COMMAND = [sys.executable, "-m", "accept_order"]
GOLDEN_DIR = Path(__file__).parent / "data" / "golden"
REACHED_STDOUT = "-: the JSON on stdout, in place of the report"


def _merge_inputs(folder: Path) -> list[str]:
    """Two latency files of different measurements (merge refuses one measurement twice)."""
    text = (GOLDEN_DIR / "latency.json").read_text()
    (folder / "a.json").write_text(text)
    (folder / "b.json").write_text(re.sub(r'"started_at": "[^"]*"', '"started_at": "2020-01-01T00:00:00+00:00"', text))
    return [str(folder / "a.json"), str(folder / "b.json")]


# One real run of each command family that can run in a test's own process in a second or two (observe, atlas, reload
# and serve go through the same option and the same save: test_every_command_with_json_takes_a_dash and
# test_each_kind_on_stdout_is_its_file; serve's own stdout: test_serve_says_where_it_listens_on_stderr...)
RUNS = [
    (["run", "-m", "epoll", "-w", "2", "-n", "3"], "run"),
    (["run", "-m", "epoll", "-w", "2", "-n", "2", "--repeat", "2"], "repeat"),
    (["compare", "--modes", "epoll,blocking", "-w", "2", "-n", "3"], "compare"),
    (["herd", "--modes", "epoll", "-w", "2", "-n", "3"], "herd"),
    (["sweep", "-m", "epoll", "-w", "2", "--accept-batch", "1", "-n", "3"], "sweep"),
    (["latency", "-m", "epoll", "-w", "2", "-n", "20", "-c", "2"], "latency"),
    (["latency", "--modes", "epoll,blocking", "-w", "2", "-n", "20", "-c", "2"], "latency-compare"),
    (["burst", "-w", "2", "--clients", "4"], "burst"),
    (["ramp", "-w", "2", "--concurrency-steps", "2", "--step", "200ms"], "ramp"),
    (["merge", "{a}", "{b}"], "latency"),
    (["inspect", "--port", "{port}"], "inspect"),  # this test's own listening socket
]


@pytest.mark.parametrize(("args", "kind"), RUNS, ids=[" ".join(args[:3]) for args, _ in RUNS])
def test_a_dash_puts_the_json_alone_on_stdout_and_makes_no_file(
    args: list[str], kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # where a file named '-' was made
    a, b = _merge_inputs(tmp_path)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        result = run_cli([arg.format(a=a, b=b, port=port) for arg in args] + ["--json", "-"])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "-").exists()
    document = json.loads(result.stdout)  # the whole of stdout is one JSON document: no report before or after it
    assert (document["schema"], document["kind"]) == ("accept-order", kind)
    assert "wrote" not in result.stderr
    # it is a result file `show` reads, and what show prints of it (the report) went nowhere: not to stderr either
    (tmp_path / "saved.json").write_text(result.stdout)
    shown = run_cli(["show", str(tmp_path / "saved.json")])
    assert shown.exit_code == 0, shown.output
    first = next(line for line in shown.stdout.splitlines() if line.strip())
    assert first not in result.stderr


def test_every_command_with_json_takes_a_dash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command's --json (all of them, serve, inspect, observe, atlas and reload among them) takes '-' as it is,
    unchecked as a path (the check of a path made a probe file '.-.*.tmp' beside it and the room check read '.'), and
    its --help says what '-' does."""
    monkeypatch.chdir(tmp_path)
    with_json = []
    for name in COMMANDS:
        command = main.get_command(click.Context(main), name)
        assert command is not None
        for param in command.params:
            if isinstance(param, click.Option) and "--json" in param.opts:
                with_json.append(name)
                ctx = click.Context(command, info_name=name)
                assert param.process_value(ctx, "-") == "-", name
                record = param.get_help_record(ctx)
                assert record is not None and REACHED_STDOUT in " ".join(record[1].split()), name
    assert {"run", "serve", "inspect", "observe", "atlas", "reload", "merge", "latency"} <= set(with_json)
    assert list(tmp_path.iterdir()) == []
    from accept_order.cli.room import check_room_for

    check_room_for("observe", {"json_path": "-"})  # no file to make room for: stdout is not this directory


@pytest.mark.parametrize("kind", sorted(k for k in EXPERIMENTS if (GOLDEN_DIR / f"{k}.json").exists()))
def test_each_kind_on_stdout_is_its_file(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What '-' writes is what a file of the same result holds, byte for byte, for every kind a command saves; and the
    report is left out (stdout holds the JSON alone)."""
    monkeypatch.chdir(tmp_path)
    experiment = find(kind)
    assert experiment is not None
    _, document = load(GOLDEN_DIR / f"{kind}.json")
    result = experiment.load(document)
    save(tmp_path / "file.json", kind, result)
    capsys.readouterr()
    report_and_save(lambda: pytest.fail("the report was built"), "-", kind, result)
    out, err = capsys.readouterr()
    assert (out, err) == ((tmp_path / "file.json").read_text(), "")
    assert not (tmp_path / "-").exists()


def test_serve_says_where_it_listens_on_stderr_and_the_tally_is_the_json_on_stdout(
    free_port: int, tmp_path: Path
) -> None:
    """serve announces its address and workers as it starts: on stdout before, where `serve --json - | jq` would have
    read it as the start of the JSON. Its tally (SIGTERM) is then the JSON alone on stdout."""
    proc = subprocess.Popen(
        [*COMMAND, "serve", "-m", "blocking", "-w", "2", "--port", str(free_port), "--json", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    assert proc.stdout is not None and proc.stderr is not None
    err = OutputReader(proc.stderr)
    try:
        err.wait_for(r"try: .*\n", 60)  # the announcement's last line
        with socket.create_connection(("127.0.0.1", free_port), timeout=10) as conn:
            assert conn.recv(64)  # served: the built-in workers answer with their index
        proc.send_signal(signal.SIGTERM)
        out = proc.stdout.read()
        assert proc.wait(timeout=60) == 0, err.finish()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    document = json.loads(out)
    assert document["kind"] == "serve" and sum(c["accepts"] for c in document["counters"]) == 1
    assert f"listening on 127.0.0.1:{free_port}" in err.finish()


GONE = r"its reader has gone \((\d+) of (\d+) bytes written\)"  # a pattern: the bytes the pipe took, of all


def _one_error_line(done: Any, reason: str, folder: Path, code: int = 1) -> None:
    """Exit `code`, one line saying why (`reason`: a pattern), and where the result was kept: the measurement is not
    lost with its reader (it was, before: nothing of it was left anywhere, the report not printed either)."""
    assert done.returncode == code, done.stderr
    kept = re.fullmatch(
        rf"accept-order: error: cannot write the result to stdout: {reason}; the result is kept in "
        r"(\./accept-order-run-\d{8}-\d{6}\.json)\n",
        done.stderr,
    )
    assert kept, done.stderr
    path = kept[kept.lastindex or 0]
    assert [p.name for p in folder.iterdir()] == [Path(path).name]  # the one file, no temporary one
    document = json.loads((folder / path).read_text())
    assert (document["kind"], len(document["records"])) == ("run", document["load"]["connections"])


def test_a_reader_gone_before_it_took_the_json_is_one_line_and_exit_141(tmp_path: Path) -> None:
    """`--json - | head -c 10`: head exits after 10 bytes; a JSON longer than the pipe holds (3000 connections: ~490
    KB against 64 KiB) meets EPIPE. A report's reader going away ends quietly (141); a result's says where it is kept
    (it was exit 1, which a pipe's user reads as the run failing)."""
    head = shutil.which("head")
    assert head is not None
    writer = subprocess.Popen(
        [*COMMAND, "run", "-m", "epoll", "-w", "2", "-n", "3000", "--json", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    assert writer.stdout is not None and writer.stderr is not None
    reader = subprocess.run([head, "-c", "10"], stdin=writer.stdout, capture_output=True, check=True, timeout=120)
    writer.stdout.close()  # head alone held the pipe's reading end: now nobody does
    err = writer.stderr.read()
    writer.wait(timeout=120)
    assert reader.stdout == b'{\n "schema'
    done = subprocess.CompletedProcess(writer.args, writer.returncode, "", err)
    _one_error_line(done, GONE, tmp_path, ExitStatus.BROKEN_PIPE)


def _run_with_no_reader(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`argv` run with its stdout a pipe whose reading end is closed before it starts."""
    readable, writable = os.pipe()
    os.close(readable)
    try:
        return subprocess.run(argv, stdout=writable, stderr=subprocess.PIPE, text=True, timeout=120, cwd=cwd)
    finally:
        os.close(writable)


def test_a_pipe_nobody_reads_is_one_line_and_exit_141(tmp_path: Path) -> None:
    """The same, certain for a short JSON too: the pipe's reading end is closed before the run starts."""
    done = _run_with_no_reader([*COMMAND, "run", "-m", "epoll", "-w", "2", "-n", "3", "--json", "-"], tmp_path)
    _one_error_line(done, GONE.replace(r"(\d+) of", "0 of"), tmp_path, ExitStatus.BROKEN_PIPE)


def test_a_peek_at_a_json_the_pipe_holds_is_a_success(tmp_path: Path) -> None:
    """`--json - | head -c 100` of a result that fits the empty pipe (about 10 KB): written a page at a time, head took
    the first page and left, and the second or third met EPIPE (exit 1 and a kept file in 5 of 10 runs at load 8, a
    race: test_a_json_the_empty_pipe_holds_is_one_write asks without one); now the whole JSON goes in one write."""
    head = shutil.which("head")
    assert head is not None
    argv = [*COMMAND, "latency", "-m", "epoll", "-w", "2", "-n", "300", "-c", "4", "--json", "-"]
    writer = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert writer.stdout is not None and writer.stderr is not None
    reader = subprocess.run([head, "-c", "100"], stdin=writer.stdout, capture_output=True, check=True, timeout=120)
    writer.stdout.close()
    err = writer.stderr.read()
    assert writer.wait(timeout=120) == 0, err
    assert reader.stdout.startswith(b'{\n "schema": "accept-order"') and len(reader.stdout) == 100
    assert "error" not in err and list(tmp_path.iterdir()) == [], err  # nothing kept: the pipe took it all


def test_a_json_the_empty_pipe_holds_is_one_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The write the peek above depends on, seen without a race: every write's size, into a pipe nobody reads yet."""
    readable, writable = os.pipe()
    text = json.dumps({"pad": "x" * 20_000})  # five pages
    sizes: list[int] = []
    write = os.write

    def counted(fd: int, data: Any) -> int:
        sizes.append(len(data))
        return write(fd, data)

    try:
        with open(writable, "w", closefd=False) as stream:
            monkeypatch.setattr(sys, "stdout", stream)
            monkeypatch.setattr(os, "write", counted)
            result_stdout.write_result(text, "latency")
            monkeypatch.undo()
        assert sizes == [len(text)], sizes
        assert os.read(readable, 65536) == text.encode()
    finally:
        os.close(readable)
        os.close(writable)


def test_a_signal_while_the_reader_takes_nothing_ends_the_wait_in_one_line(tmp_path: Path) -> None:
    """The JSON is written with signals held (a Ctrl-C cannot cut it short while its reader takes it); a reader that
    takes nothing kept the command blocked in write() for ever, deaf to SIGTERM. Now the held signal ends the wait
    once stdout has taken nothing for a second: one line saying how much was written, exit 1."""
    with UnreadStdout([*COMMAND, "run", "-m", "epoll", "-w", "2", "-n", "3000", "--json", "-"], tmp_path) as stdout:
        stdout.wait_until_full(120, "the JSON to fill the pipe nobody reads")
        stdout.proc.send_signal(signal.SIGTERM)
        assert stdout.proc.wait(timeout=60) == 1  # before: still blocked, whatever the timeout
        assert stdout.proc.stderr is not None
        err = stdout.proc.stderr.read()
    line = re.fullmatch(
        rf"accept-order: error: cannot write the result to stdout: SIGTERM came while its reader took none of it "
        rf"\({stdout.capacity} of (\d+) bytes written\); the result is kept in (\./accept-order-run-[-\d]+\.json)\n",
        err,
    )
    assert line, err
    assert (tmp_path / line[2]).stat().st_size == int(line[1])  # the whole of it, which stdout did not take


@pytest.mark.parametrize(("redirect", "reason"), [(">&-", "it is closed"), (">/dev/full", "No space left on device")])
def test_a_closed_or_full_stdout_is_one_line_and_exit_1(redirect: str, reason: str, tmp_path: Path) -> None:
    command = " ".join([*COMMAND, "run", "-m", "epoll", "-w", "2", "-n", "3", "--json", "-"])
    done = subprocess.run(
        ["sh", "-c", f"exec {command} {redirect}"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    _one_error_line(done, reason, tmp_path)


def test_plot_says_a_picture_goes_to_a_file() -> None:
    """plot's -o names a picture's file; '-' is refused in one line that says why, not "must end in .png"."""
    result = run_cli(["plot", str(GOLDEN_DIR / "latency.json"), "-o", "-"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
    assert "--output -: a picture is written to a file, not to stdout: give one ending in .png or .svg" in result.stderr


# -- the experiment scripts (experiments/*.py), whose --json wrote a file named '-' too -----------------------------

SCRIPT_RUNS = [
    ("herd.py", SCRIPT_ARGS["herd.py"], "Table 2"),
    ("latency_shared_vs_reuseport.py", SCRIPT_ARGS["latency_shared_vs_reuseport.py"], "Seed 000's finding"),
]


@pytest.mark.parametrize(("script", "args", "title"), SCRIPT_RUNS, ids=[script for script, _, _ in SCRIPT_RUNS])
def test_an_experiment_script_puts_its_json_on_stdout_and_its_tables_on_stderr(
    script: str, args: list[str], title: str, tmp_path: Path
) -> None:
    """A script's tables are its findings, which no `show` prints again: with '-' they go to stderr, the JSON alone
    to stdout."""
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / script), *args, "--json", "-"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "-").exists()
    document = json.loads(done.stdout)
    assert document.get("kind") == "latency-compare" if script.startswith("latency") else len(document["burst"]) == 1
    assert title in done.stderr


@pytest.mark.parametrize(("script", "args", "title"), SCRIPT_RUNS, ids=[script for script, _, _ in SCRIPT_RUNS])
def test_an_experiment_script_says_when_stdout_did_not_take_its_json(
    script: str, args: list[str], title: str, tmp_path: Path
) -> None:
    done = _run_with_no_reader([sys.executable, str(SCRIPTS / script), *args, "--json", "-"], tmp_path)
    assert done.returncode == ExitStatus.BROKEN_PIPE, done.stderr  # as the accept-order commands end (it was 1)
    stem = script.removesuffix(".py")
    line = re.search(  # its prog, and where the JSON went instead
        rf"{script}: error: cannot write the JSON to stdout: its reader has gone; the result is kept in "
        rf"(\./{stem}-[-\d]+\.json)\n",
        done.stderr,
    )
    assert line, done.stderr
    assert json.loads((tmp_path / line[1]).read_text())
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert title in done.stderr  # the findings were not lost with the JSON
