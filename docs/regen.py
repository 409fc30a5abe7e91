"""Run every command block marked for regeneration in the docs and rewrite its output in place.

    .venv/bin/python docs/regen.py [PAGE...]     # default: README.md and every docs/**/*.md
    .venv/bin/python docs/regen.py PAGE:LINE     # only the block whose fence opens at LINE (as --list shows)
    .venv/bin/python docs/regen.py --list        # the marked blocks, run nothing

A block is marked by an HTML comment on the line before its fence (invisible on the site):

    <!-- regen -->                    or   <!-- regen setup=nginx-web timeout=900 -->
    ```console
    $ accept-order run --mode blocking
    (output, replaced)
    ```

In a `console` block every line that starts with `$ ` is a command (a trailing backslash continues it) and
everything else is output: the commands are run in order by one bash, each echoed as `$ COMMAND` before
its output, stderr merged into stdout, and the output replaced by what they print. A `pycon` block is
Python: each `>>> ` statement (with its `... ` lines) is run in one interpreter, as the REPL would, and
its printed value replaces the old one.

The commands run with COLUMNS=100 (the width every output in the docs is drawn at), the tool's venv first on
PATH, and in one scratch directory per page, so that a block can use a file an earlier block on the
same page wrote (`--json latency.json`, then `show latency.json`; `cwd=repo` runs a block in the
repository instead). `setup=NAME` first prepares what a
block needs and cannot show (a server started by hand), and stops it after the block; see SETUPS.
Outputs differ from run to run (pids, ports, timings): the diff is reviewed, not avoided. The progress
heartbeat a long command prints off a terminal ("accept-order: run 3 of 10, 42 s elapsed", "accept-order: 85,518
connections: 85,518 served, 0 failed, 10 s elapsed") is left out:
on a terminal it is a bar, erased before the report.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = 100
MARKER = re.compile(r"^<!--\s*regen\b(?P<options>[^>]*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<fence>```+)\s*(?P<lang>\w*)\s*$")
DEFAULT_TIMEOUT_S = 900.0
# several runs: "run 3 of 10, 42 s elapsed, about 1 min left", with the one under way's count once it ticked ("run 3
# of 5: 9,747 of 20,000 connections: 9,747 served, 0 failed, 10 s elapsed, ..."); one latency run: "102,626
# connections: 102,626 served, 0 failed, 10 s elapsed", "31,000 of 100,000 connections: ... failed (timeout), ...",
# "... requests: ..." (a kept load), or the time alone
REACHED = r"[\d,]+ (of [\d,]+ )?(connections|requests)(: [\d,]+ served, [\d,]+ failed( \([^)]*\))?)?"
HEARTBEAT = re.compile(
    rf"^accept-order: ((run|step) \d+ of \d+(: {REACHED})?, |{REACHED}, )?\d+ (s|min|h \d+ min) elapsed(, .* left)?$"
)


@dataclass
class Block:
    """One marked block: where it sits in its page, its language, options and the input lines."""

    page: Path
    start: int  # index of the opening fence's line
    end: int  # index of the closing fence's line
    lang: str
    options: dict[str, str]
    body: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page}:{self.start + 1}"

    def commands(self) -> list[str]:
        """The block's inputs: shell commands (console) or Python statements (pycon), continuations joined."""
        prompt, more = ("$ ", None) if self.lang == "console" else (">>> ", "... ")
        found: list[str] = []
        continued = False
        for line in self.body:
            if continued:
                found[-1] += "\n" + line
                continued = line.endswith("\\")
            elif line.startswith(prompt):
                found.append(line[len(prompt) :])
                continued = self.lang == "console" and line.endswith("\\")
            elif more and line.startswith(more) and found:
                found[-1] += "\n" + line[len(more) :]
        return found


def find_blocks(page: Path) -> list[Block]:
    lines = page.read_text().splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        marker = MARKER.match(lines[i])
        fence = FENCE.match(lines[i + 1]) if marker and i + 1 < len(lines) else None
        if marker is None or fence is None:
            if marker:
                raise SystemExit(f"{page}:{i + 1}: a regen marker must be followed by a ``` fence")
            i += 1
            continue
        options = dict(part.split("=", 1) for part in marker["options"].split() if "=" in part)
        lang = fence["lang"] or "console"
        if lang not in ("console", "pycon"):
            raise SystemExit(f"{page}:{i + 2}: a regen block is `console` or `pycon`, not {lang!r}")
        end = next((j for j in range(i + 2, len(lines)) if lines[j].strip() == fence["fence"]), None)
        if end is None:
            raise SystemExit(f"{page}:{i + 2}: the fence is never closed")
        blocks.append(Block(page, i + 1, end, lang, options, lines[i + 2 : end]))
        i = end + 1
    return blocks


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["COLUMNS"] = str(COLUMNS)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("LINES", None)
    env["TERM"] = "dumb"
    return env


def run_console(block: Block, workdir: Path, timeout_s: float) -> tuple[list[str], int]:
    """Run the block's commands in one bash; return what it printed (each command echoed) and its status."""
    script = ["exec 2>&1"]
    for command in block.commands():
        script.append(f"printf '%s\\n' {shlex.quote('$ ' + command)}")
        script.append(command)
    return _run(["bash", "-c", "\n".join(script)], workdir, timeout_s)


# Runs each statement as the interactive interpreter would: an expression's value is printed by displayhook.
PYCON_RUNNER = textwrap.dedent(
    """
    import json, sys
    for source in json.load(sys.stdin):
        lines = source.split("\\n")
        print(">>> " + lines[0]); [print("... " + more) for more in lines[1:]]
        sys.stdout.flush()
        exec(compile(source + "\\n", "<docs>", "single"))
        sys.stdout.flush()
    """
)


def run_pycon(block: Block, workdir: Path, timeout_s: float) -> tuple[list[str], int]:
    import json

    return _run([sys.executable, "-c", PYCON_RUNNER], workdir, timeout_s, json.dumps(block.commands()))


def _run(argv: list[str], workdir: Path, timeout_s: float, stdin: str | None = None) -> tuple[list[str], int]:
    # A session of its own, so that a timeout ends everything the block started (background jobs too).
    process = subprocess.Popen(
        argv,
        cwd=workdir,
        env=environment(),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    # Read on a thread: a background process the block left behind would otherwise hold the pipe open.
    chunks: list[str] = []
    reader = threading.Thread(target=lambda: chunks.append(process.stdout.read() if process.stdout else ""))
    reader.start()
    if process.stdin is not None:
        process.stdin.write(stdin or "")
        process.stdin.close()
    note = ""
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        note = f"\n(regen: timed out after {timeout_s:.0f} s)\n"
    with contextlib.suppress(ProcessLookupError):  # whatever the block started and did not stop
        os.killpg(process.pid, signal.SIGKILL if note else signal.SIGTERM)
    process.wait()
    reader.join()
    out = "".join(chunks) + note
    lines = [line.rstrip() for line in out.rstrip("\n").splitlines()]
    # Off a terminal a long command prints a progress heartbeat every 10 s; on the reader's terminal that
    # is a bar erased before the report, so the page shows what the reader keeps.
    return [line for line in lines if not HEARTBEAT.match(line)], process.returncode


# --- setups: what a block needs that it does not show ------------------------------------------------

NGINX_WEB = """\
worker_processes {workers};
pid nginx.pid;
events {{ {events} }}
http {{
    access_log off;
    client_body_temp_path body;
    proxy_temp_path proxy;
    fastcgi_temp_path fastcgi;
    uwsgi_temp_path uwsgi;
    scgi_temp_path scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{ return 200 "hello, world\\n"; }}
    }}
}}
"""


# docs/howto/behind-a-proxy.md: keep-alive connections kept as long as the client keeps them (by default nginx
# closes one after 1000 requests, over HTTP/2 too: h2load -c 1 -n 3000 got 1000 answers and 2000 failures here,
# it opens no new connection), each request logged with the worker that served it and the connection it came
# on: the witness printed beside observe
NGINX_KEPT = """\
worker_processes {workers};
pid nginx.pid;
events {{ {events} }}
http {{
    log_format kept '$pid $connection $connection_requests';
    access_log access.log kept;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path body;
    proxy_temp_path proxy;
    fastcgi_temp_path fastcgi;
    uwsgi_temp_path uwsgi;
    scgi_temp_path scgi;
    server {{
        listen 127.0.0.1:{port}{listen};
        location / {{ return 200 "hello, world\\n"; }}
    }}
}}
"""


@contextlib.contextmanager
def _nginx(
    directory: Path, port: int, workers: int, events: str = "", template: str = NGINX_WEB, listen: str = ""
) -> Iterator[None]:
    """A stock nginx started by hand in `directory` (its pid in directory/nginx.pid), stopped after; its config
    from `template` (`listen`: what follows the address, e.g. ` http2`), its access log (if any) new."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "nginx.conf").write_text(template.format(workers=workers, events=events, port=port, listen=listen))
    (directory / "access.log").unlink(missing_ok=True)
    base = ["nginx", "-e", str(directory / "error.log"), "-p", str(directory), "-c", str(directory / "nginx.conf")]
    subprocess.run(base, check=True)
    try:
        pidfile = directory / "nginx.pid"
        deadline = time.monotonic() + 10
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        yield
    finally:
        subprocess.run([*base, "-s", "quit"], check=False)
        pidfile = directory / "nginx.pid"
        deadline = time.monotonic() + 10
        while pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.05)


Setup = Callable[[Path], contextlib.AbstractContextManager[None]]


def _nginx_setup(
    path: str, port: int, workers: int, events: str = "", template: str = NGINX_WEB, listen: str = ""
) -> Setup:
    return lambda workdir: _nginx(Path(path), port, workers, events, template, listen)


@contextlib.contextmanager
def _hello_conf(workdir: Path) -> Iterator[None]:
    """/tmp/hello/nginx.conf written, nginx not started: the block starts and stops it itself."""
    directory = Path("/tmp/hello")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "nginx.conf").write_text(NGINX_WEB.format(workers=3, events="", port=8080))
    yield


HELLO_PY = """\
# three forked workers that block in accept() and answer hello, naming no worker
import os
import socket

listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 8081))
listener.listen(511)
for _ in range(3):
    if os.fork() == 0:
        while True:
            connection, _ = listener.accept()
            connection.sendall(b"hello\\n")
            connection.close()
while True:  # the master stays while any worker lives
    try:
        os.wait()
    except ChildProcessError:
        break
"""


@contextlib.contextmanager
def _hello_py(workdir: Path) -> Iterator[None]:
    """hello.py written into the page's scratch directory: the block starts and stops it itself."""
    (workdir / "hello.py").write_text(HELLO_PY)
    yield


@contextlib.contextmanager
def _cluster(workdir: Path) -> Iterator[None]:
    """docs/howto/cluster.md: client hosts c1, c2, c3 and a server host, network namespaces on a bridge with an
    sshd each (tests/cluster.py, the suite's own); `accept-order serve -w 4` on the server's address, port 8080.
    The cluster's ssh config is copied to the page's scratch directory as `ssh_config`, its server host named
    `server` there, and an `ssh` first on the block's PATH adds `-F ssh_config` (the block's command is then a
    real cluster's, whose hosts are in ~/.ssh/config: `--ssh-config FILE` in a page must name a file that exists
    when tests/test_docs.py parses it); $SERVER is the server's address, for --target, which this host resolves
    (`server` is an ssh alias only)."""
    import shutil

    sys.path.insert(0, str(ROOT / "tests"))
    import cluster  # imports pytest and the suite's conftest: only when a block asks for a cluster

    reason = cluster.problem()
    ssh = shutil.which("ssh")
    if reason or ssh is None:
        raise RuntimeError(f"setup cluster: {reason or 'ssh is not installed'}")
    with cluster.Cluster(workdir / "cluster", clients=3, server=True) as made:
        config = workdir / "ssh_config"
        config.write_text(made.ssh_config.read_text().replace("Host srv\n", "Host server\n"))
        wrapper = workdir / "bin" / "ssh"
        wrapper.parent.mkdir(exist_ok=True)
        wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(ssh)} -F {shlex.quote(str(config))} "$@"\n')
        wrapper.chmod(0o755)
        address = made.address("srv")
        serve = [sys.executable, "-m", "accept_order", "serve", "--host", address, "--port", "8080", "-w", "4"]
        made.run_in("srv", serve, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # ended with the cluster
        deadline = time.monotonic() + 30
        while not _answers(address, 8080) and time.monotonic() < deadline:
            time.sleep(0.05)
        saved = dict(os.environ)
        # the block's bash gets environment(), a copy of os.environ
        os.environ.update(SERVER=address, PATH=f"{wrapper.parent}{os.pathsep}{os.environ.get('PATH', '')}")
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)


def _answers(address: str, port: int) -> bool:
    import socket

    try:
        with socket.create_connection((address, port), timeout=1) as sock:
            return sock.recv(64).startswith(b"worker")
    except OSError:
        return False


SETUPS: dict[str, Setup] = {
    # docs/howto/your-server.md: a Debian nginx started by hand, as an operator's would be
    "nginx-web": _nginx_setup("/tmp/web", 8080, 2),
    "nginx-web-mutex": _nginx_setup("/tmp/web-mutex", 8080, 2, "accept_mutex on;"),
    "nginx-web-3": _nginx_setup("/tmp/web", 8080, 3),
    "nginx-web-multi": _nginx_setup("/tmp/web-multi", 8081, 3, "multi_accept on;"),
    # docs/howto/behind-a-proxy.md: 4 workers keeping their keep-alive connections, over HTTP/1.1 and HTTP/2
    # (cleartext, prior knowledge: what h2load speaks to an http:// URL)
    "nginx-kept": _nginx_setup("/tmp/kept", 8090, 4, template=NGINX_KEPT),
    "nginx-kept-h2": _nginx_setup("/tmp/kept-h2", 8091, 4, template=NGINX_KEPT, listen=" http2"),
    "hello-conf": _hello_conf,
    "hello-py": _hello_py,
    # docs/howto/cluster.md: three client hosts and a server host, namespaces with an sshd each
    "cluster": _cluster,
}


def regenerate(page: Path, dry_run: bool = False, log: Callable[[str], None] = print, only: int | None = None) -> int:
    """Rewrite every marked block of `page` (`only`: the one whose fence opens at that line, as `where` and --list
    number them; a block that reads what an earlier one wrote needs the page whole); return how many blocks ended
    with a non-zero status."""
    blocks = find_blocks(page)
    if only is not None:
        blocks = [block for block in blocks if block.start + 1 == only]
        if not blocks:
            raise SystemExit(f"{page}:{only}: no marked block opens there (see --list)")
    if not blocks or dry_run:
        for block in blocks:
            log(f"{block.where}: {block.lang} {' '.join(f'{k}={v}' for k, v in block.options.items())}")
        return 0
    lines = page.read_text().splitlines()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="accept-order-docs-") as scratch:
        outputs: dict[int, list[str]] = {}
        for block in blocks:  # in page order: a block may read what an earlier one wrote
            started = time.monotonic()
            timeout_s = float(block.options.get("timeout", DEFAULT_TIMEOUT_S))
            with contextlib.ExitStack() as stack:
                for name in filter(None, block.options.get("setup", "").split(",")):
                    if name not in SETUPS:
                        raise SystemExit(f"{block.where}: no setup {name!r} (known: {', '.join(SETUPS)})")
                    stack.enter_context(SETUPS[name](Path(scratch)))
                runner = run_console if block.lang == "console" else run_pycon
                # cwd=repo: a block that reads the repository's own files (tests/data/v1/...)
                workdir = ROOT if block.options.get("cwd") == "repo" else Path(scratch)
                output, status = runner(block, workdir, timeout_s)
            outputs[block.start] = output
            note = "" if status == 0 else f"  (exit status {status})"
            failed += status != 0
            log(f"{block.where}: {time.monotonic() - started:.1f} s{note}")
        for block in reversed(blocks):  # from the end, so earlier blocks' line numbers stay valid
            lines[block.start + 1 : block.end] = outputs[block.start]
    page.write_text("\n".join(lines) + "\n")
    return failed


def _page_and_line(arg: Path) -> tuple[Path, int | None]:
    """PAGE or PAGE:LINE."""
    name, colon, line = str(arg).rpartition(":")
    if colon and line.isdigit():
        return Path(name).resolve(), int(line)
    return arg.resolve(), None


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", type=Path, help="pages to regenerate (default: all)")
    parser.add_argument("--list", action="store_true", help="list the marked blocks, run nothing")
    args = parser.parse_args(argv)
    # SIGTERM and SIGHUP unwind like Ctrl-C, so that a setup's server (an nginx started for a block) is stopped
    # by its finally rather than left running
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, signal.default_int_handler)
    failed = 0
    for page, only in [_page_and_line(p) for p in args.pages] or [(p, None) for p in pages()]:
        failed += regenerate(page, dry_run=args.list, only=only)
    if failed:
        print(
            f"{failed} block(s) ended with a non-zero status: check that their output is the one meant", file=sys.stderr
        )
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("regen: interrupted; the page being regenerated is left as it was", file=sys.stderr)
        sys.exit(130)
