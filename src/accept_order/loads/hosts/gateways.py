"""Reaching the client hosts: one execnet gateway per host, over the system's OpenSSH client.

Why execnet: it is pytest-xdist's engine, speaks through the user's own `ssh` (its config, keys, ProxyJump,
agent), and ships itself: a client host needs only Python and accept-order, no daemon and no port of ours.

Each host's `ssh` starts in a session of its own: the terminal's Ctrl-C (sent to the whole foreground
process group) must reach the coordinator only, which then asks every host to stop and report what it
measured; an ssh that took the Ctrl-C itself would drop its host's partial result. When the coordinator
dies without a word (SIGKILL), the pipe into each ssh closes, ssh closes the session, and the remote side
(remote_side.py) ends its load at once.

What ssh (and the remote shell and Python behind it) says on stderr is kept, not passed to the terminal: the
command's own error line quotes its last line ("No route to host", "python3: not found"), one line per failure
rather than ssh's lines beside ours.
"""

from __future__ import annotations

import functools
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import IO, Any

from ...core.blocked_pool import BlockedPool, unblocked
from ...core.errors import LoadError
from ...core.hosts import ClientHosts
from ...core.signal_order import start_thread
from ...core.text import escape_controls as inert
from ...core.version import VERSION
from . import remote_side
from .beats import beater
from .hello_refusals import not_started, refusal, spoke_first
from .ssh_config_read import connect_timeout_unset as connect_timeout_unset  # tests read it here
from .ssh_config_read import unset

HELLO_TIMEOUT_S = 60.0  # a slow host importing accept-order for the first time (cold caches)
CLOSE_TIMEOUT_S = 5.0  # a remote interpreter ends when its channel closes; past this its ssh is killed
SAID_LINES = 20  # of ssh's stderr, kept for the error line
SSH_FAILED = 255  # ssh's exit for a failure of its own (not the remote command's)
SETTLE_S = 2.0  # for a failed ssh to exit and its last words to be read, before the error line quotes them
# ssh's own default is none: an address that drops packets waited out the kernel's SYN retries, 12 minutes here with
# nothing on the screen. A ConnectTimeout of the user's ssh config (ssh -G shows it) is theirs and wins.
CONNECT_TIMEOUT_S = 15
# ssh's own default is no keepalive: a host whose network went while the coordinator was SIGKILLed kept this ssh
# waiting for its end (TCP gives up on a dead connection after about a quarter of an hour). With this it ends
# about 20 s after the host last said anything (ssh's default ServerAliveCountMax, 3, unanswered). The user's own
# ServerAliveInterval (ssh -G) wins, and so does their ServerAliveCountMax: an -o CountMax here would override it.
SERVER_ALIVE = ["-o", "ServerAliveInterval=5"]


class Ssh:
    """The subprocess module as execnet's Popen2IOMaster uses it, for one host: its ssh in a session of its own
    (see the module's docstring), its stderr read by a thread and the last lines kept. `cancel()` ends the ssh
    and refuses to start one after it: a Ctrl-C while hosts connect need not wait for a handshake that hangs."""

    PIPE = subprocess.PIPE

    def __init__(self) -> None:
        self.said: deque[str] = deque(maxlen=SAID_LINES)
        self.process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._cancelled = False
        self._drained = threading.Event()

    def Popen(self, args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:  # noqa: N802 - subprocess's name
        with self._lock:
            if self._cancelled:
                raise OSError("the run was stopped before this host was reached")
            # unblocked: started from a pool's thread, which leaves SIGINT, SIGTERM and SIGHUP to the main thread
            # (core/blocked_pool.py); ssh must end on the SIGTERM of cancel() or of execnet's close. An ssh that
            # cannot be started exits 255 as ssh's own failures do: execnet reads that (and only that) as a host
            # not reached; with 127 it went on to a gateway with no process behind it ("its Python did not start")
            argv = unblocked(args, exec_failed=SSH_FAILED)
            process = subprocess.Popen(argv, start_new_session=True, stderr=subprocess.PIPE, **kwargs)
            self.process = process
        assert process.stderr is not None
        stderr = process.stderr
        start_thread(lambda: self._drain(stderr), "ssh-stderr")
        return process

    def _drain(self, stream: IO[bytes]) -> None:
        try:
            with stream:
                for line in iter(stream.readline, b""):
                    if text := line.decode(errors="replace").strip():
                        self.said.append(text)
        finally:
            self._drained.set()

    def last_said(self, settle: bool = False) -> str | None:
        """ssh's (or the remote shell's) last line on stderr, made inert, or None. `settle`: ssh failed; give it
        a moment to exit and its stderr to be read to the end (its last words are the reason)."""
        if settle and self.process is not None:
            try:
                self.process.wait(SETTLE_S)
                self._drained.wait(SETTLE_S)
            except subprocess.TimeoutExpired:
                pass  # still up (a host that does not answer): what it said so far
        return inert(self.said[-1])[:200] if self.said else None

    def end_left(self) -> None:
        """Its ssh has exited: end what it left in its group. A ProxyJump's ssh, ended by the SIGHUP of ours at
        its ConnectTimeout, leaves its own ProxyCommand running; that one keeps the group's id in use (a group
        with no one left: ESRCH)."""
        if self.process is not None and self.process.poll() is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self.process is not None and self.process.poll() is None:  # not reaped: its group is still its own
                # the whole group: ssh starts its ProxyCommand (or ProxyJump's ssh) in it, and a SIGTERMed ssh that
                # has not yet set its handlers dies without ending them
                os.killpg(self.process.pid, signal.SIGTERM)


def _execmodel(ssh: Ssh) -> Any:
    import execnet.gateway_base as base

    class OwnSession(base.ThreadExecModel):
        @property
        def subprocess(self) -> Any:
            return ssh

    return OwnSession()


def remote_python(hosts: ClientHosts) -> str:
    """The interpreter to start on each host: --client-python, else this one's path where it exists there
    (clusters are often laid out alike), else python3. A shell word list, read by the host's shell."""
    if hosts.python is not None:
        return shlex.quote(hosts.python)
    own = shlex.quote(sys.executable)
    return f"$(test -x {own} && echo {own} || echo python3)"


@dataclass
class Host:
    """One connected host: its destination as given, the gateway, the channel to remote_side, its ssh; `name`,
    how a line names it ("client host c1", "--observe-on srv")."""

    destination: str
    gateway: Any
    channel: Any
    python: str = ""
    version: str = ""
    hostname: str = ""
    ssh: Ssh = field(default_factory=Ssh)
    name: str = ""
    boot_id: str = ""  # its kernel's (remote_side._boot_id): the same as this host's, it shares our CPUs

    def last_said(self) -> str:
        """What ssh last said about this host, as " (...)" to add to a line, or nothing."""
        said = self.ssh.last_said(settle=True)
        return f" ({said})" if said else ""

    def send(self, message: tuple[Any, ...], what: str) -> None:
        """Send on the channel; a host gone meanwhile is one LoadError naming it (`what`: when, in words)."""
        try:
            self.channel.send(message)
        except CLOSED_CHANNEL:
            raise LoadError(f"{self.name}: its connection closed {what}{self.last_said()}") from None

    def receive(self, timeout: float, what: str) -> Any:
        """The next message; no answer in `timeout`, its Python failing, or the host gone: one LoadError naming it."""
        channel = self.channel
        try:
            return channel.receive(timeout=timeout)
        except channel.TimeoutError:
            raise LoadError(f"{self.name}: no answer in {timeout:g} s {what}") from None
        except channel.RemoteError as exc:  # its Python raised: the last line of its traceback
            raise LoadError(f"{self.name}: failed waiting {what} ({last_line(exc)})") from None
        except (EOFError, OSError):
            raise LoadError(f"{self.name}: its connection closed waiting {what}{self.last_said()}") from None


CLOSED_CHANNEL = (OSError, EOFError, ValueError)  # what execnet's send raises once the host is gone


def _spec(destination: str, hosts: ClientHosts, index: int) -> Any:
    import execnet

    spec = execnet.XSpec(f"ssh=h//id=host{index}")
    options = ["-o", "BatchMode=yes"]  # a host that asks for a password must fail, not wait on a terminal
    if hosts.ssh_config is not None:
        options = ["-F", hosts.ssh_config, *options]
    defaults = unset(options, destination)
    if "connecttimeout" in defaults:
        options += ["-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"]
    if "serveraliveinterval" in defaults:
        options += SERVER_ALIVE
    spec.ssh = " ".join([*options, "--", destination])  # execnet splits it on spaces (validated: none inside)
    spec.python = remote_python(hosts)
    return spec


class _Reaching:
    """One host being reached: its own execnet group (execnet's execmodel, hence our Ssh, is a group's) and ssh."""

    def __init__(self, destination: str, role: str) -> None:
        import execnet

        self.destination = destination
        self.role = role
        self.name = f"{role} {inert(destination)}"  # how the error line names it: "client host c1"
        self.ssh = Ssh()
        self.group = execnet.Group(execmodel=_execmodel(self.ssh))
        self.gateway: Any = None  # once reached
        self.watch: Any = None  # the channel the coordinator beats on (beats.py), once its hello was checked

    def fail(self, what: str, exc: BaseException | None = None) -> LoadError:
        return LoadError(f"{self.name}: {what}" + (f" ({said})" if (said := self.last_words(exc)) else ""))

    def last_words(self, exc: BaseException | None) -> str | None:
        said = self.ssh.last_said(settle=True) or (last_line(exc) if exc is not None else None)
        self.ssh.end_left()
        return said

    def close(self) -> None:
        beater.drop(self.watch)  # its beats end here: a host this close cannot reach ends on its own (beats.py)
        self.group.terminate(timeout=CLOSE_TIMEOUT_S)  # each remote interpreter exits when its channel closes

    def restart(self) -> None:
        """A host kept from the run's last load that did not answer its greeting: ended, to be reached anew."""
        import execnet

        self.close()
        self.ssh = Ssh()
        self.group = execnet.Group(execmodel=_execmodel(self.ssh))
        self.gateway = self.watch = None


def _connect_one(reaching: _Reaching, hosts: ClientHosts, index: int, part: str) -> Host:
    import execnet

    destination = reaching.destination
    if reaching.gateway is not None:  # kept from the run's last load: greeted again, or reached anew
        try:
            return _greet(reaching, reaching.gateway, hosts, part)
        except LoadError:
            reaching.restart()
    try:
        gateway = reaching.group.makegateway(_spec(destination, hosts, index))
    except (execnet.HostNotFound, OSError, EOFError) as exc:  # ssh's exit 255, or its pipe closed as execnet wrote
        raise reaching.fail("could not be reached over ssh", exc) from None
    except AssertionError:  # execnet's bootstrap read another first byte than the '1' of its Python
        raise reaching.fail(spoke_first(destination, hosts.ssh_config, hosts.python)) from None
    reaching.gateway = gateway
    return _greet(reaching, gateway, hosts, part)


def _greet(reaching: _Reaching, gateway: Any, hosts: ClientHosts, part: str) -> Host:
    """Start remote_side on the host, check its accept-order, and have it take `part`."""
    import execnet

    destination = reaching.destination
    try:  # ssh connected, but its command may have failed at once (no such Python): execnet sees a closed pipe
        channel = gateway.remote_exec(remote_side)
        hello = channel.receive(timeout=HELLO_TIMEOUT_S)
    except (execnet.RemoteError, execnet.TimeoutError, EOFError, OSError) as exc:
        raise LoadError(f"{reaching.name}: {not_started(hosts.python, reaching.last_words(exc))}") from None
    if refused := refusal(reaching.name, hello):
        raise LoadError(refused)
    _, version, python, hostname, _pid = hello[:5]
    if version != VERSION:
        raise LoadError(
            f"{reaching.name} runs accept-order {inert(str(version))}, this one {VERSION}: "
            f"install accept-order {VERSION} there"
        )
    theirs = hello[6] if len(hello) > 6 and isinstance(hello[6], dict) else {}
    if differ := unlike_sources(theirs, part):
        raise LoadError(
            f"{reaching.name} runs accept-order {VERSION} from other sources than this one's "
            f"({', '.join(f'{folder}/' for folder in differ)} differ: a development install?): "
            "install the same code there, or give --client-python one that has it"
        )
    reaching.watch = reaching.watch or beater.add(gateway, reaching.ssh.process)  # beaten for its life (beats.py)
    channel.send(("part", part))
    boot_id = str(hello[5]) if len(hello) > 5 else ""  # "": a host of an older accept-order
    host = (destination, gateway, channel, str(python), str(version), str(hostname), reaching.ssh, reaching.name)
    return Host(*host, boot_id=boot_id)


PACKAGE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # accept_order/
# The folders a host's sources must match this one's in: the code the load runs there, and the classes pickled between
# the two copies (ReplyAttribution, ConcurrentLoad, ClientProtocol in core/; LoadResult in loads/); with the part's own.
MATCHED = ("core", "loads", "loads/hosts")


@functools.cache
def own_sources(folders: tuple[str, ...]) -> dict[str, str]:
    return remote_side.sources_digests(PACKAGE, folders)


def unlike_sources(theirs: dict[str, str], part: str) -> list[str]:
    """The folders that `part` (a module of accept-order) needs whose sources on the host differ from this one's;
    a folder either side could not read (no sources there) is not compared."""
    folder = part.removeprefix(f"{__package__.split('.')[0]}.").rpartition(".")[0].replace(".", "/")
    own = own_sources(tuple(dict.fromkeys([*MATCHED, folder])))
    return [f for f in own if f in theirs and own[f] != theirs[f]]


def last_line(exc: BaseException) -> str:
    """The last line an exception says (a remote traceback's is its error), inert and cut to 200 characters."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return inert(lines[-1] if lines else type(exc).__name__)[:200]


class Gateways:
    """The run's connected hosts. `connect()` reaches them all at once (threads: an ssh handshake each) and
    raises one LoadError naming the first host that failed; `close()` ends every gateway, and with it every
    remote interpreter and its load (also after a failed or interrupted connect)."""

    def __init__(self, hosts: ClientHosts, role: str = "client host") -> None:
        self.spec = hosts.validated()
        self.role = role  # how a line names a host: "client host c1", "--observe-on srv"
        self.hosts: list[Host] = []
        self._reaching: list[_Reaching] = []
        # A later load of the run (its hosts were kept): a host that cannot be reached now is lost to this load,
        # named with why, and the others drive its share; the run's first load refuses to start without it.
        self.unreached: dict[str, str] = {}
        self.later = False  # a later load of the run: a host lost before its go is lost to this load alone

    def connect(self, part: str) -> list[Host]:
        """Reach every host and have it take `part` (a module of accept-order with `take_part(channel)`)."""
        dests = self.spec.destinations
        kept = _kept.pop((self.spec, self.role), None)
        self.later = kept is not None
        self._reaching = [(kept or {}).get(d) or _Reaching(d, self.role) for d in dests]
        with BlockedPool(max_workers=min(32, len(dests))) as pool:
            futures = [pool.submit(_connect_one, r, self.spec, i, part) for i, r in enumerate(self._reaching)]
            try:
                failures: list[LoadError] = []
                for future in futures:
                    try:
                        self.hosts.append(future.result())
                    except LoadError as exc:
                        failures.append(exc)
            except BaseException:  # Ctrl-C: the hosts still shaking hands are dropped, not waited for
                for reaching in self._reaching:
                    reaching.ssh.cancel()
                raise
        if failures and (kept is None or not self.hosts):
            raise failures[0]
        for reaching, future in zip(self._reaching, futures, strict=True):
            if (failure := future.exception()) is not None:
                self.unreached[reaching.destination] = str(failure)
        return self.hosts

    def keep(self, reported: Collection[str] | None = None) -> None:
        """Keep the hosts that `reported` this load (None: every host reached) for the run's next one (a ramp's
        step, a burst's size): their gateways stay up, each greeted again then (a few ms) instead of a new ssh
        handshake; the others end here. The next load is a later one even when none is kept. `close_kept()` ends
        them."""
        import execnet

        live = set()
        try:
            for host in (h for h in self.hosts if reported is None or h.destination in reported):
                try:  # its task over (its drivers reaped): the next load starts on a host done with this one
                    host.channel.waitclose(CLOSE_TIMEOUT_S)
                except (execnet.RemoteError, execnet.TimeoutError, EOFError, OSError):
                    continue  # still busy or failed: ended below, reached anew if the run goes on
                live.add(host.destination)
        except BaseException:  # a Ctrl-C meanwhile (an API caller's; the command line holds signals here): none kept
            self.close()
            raise
        _kept[(self.spec, self.role)] = {r.destination: r for r in self._reaching if r.destination in live}
        self._reaching = [r for r in self._reaching if r.destination not in live]
        self.close()

    def close(self) -> None:
        reaching, self._reaching = self._reaching, []
        if reaching:  # from a pool's thread even for one host: execnet's terminate starts threads of its own
            with BlockedPool(max_workers=min(32, len(reaching))) as pool:
                list(pool.map(_Reaching.close, reaching))  # at once: each may wait CLOSE_TIMEOUT_S for its host


# The hosts a run keeps between its loads (Gateways.keep), by the hosts' spec and role; the session ends them
# with the run (close_kept), whatever ended it.
_kept: dict[tuple[ClientHosts, str], dict[str, _Reaching]] = {}


def close_kept() -> None:
    """End every host kept between loads: the run is over."""
    reachings = [r for kept in _kept.values() for r in kept.values()]
    _kept.clear()
    if reachings:
        with BlockedPool(max_workers=min(32, len(reachings))) as pool:
            list(pool.map(_Reaching.close, reachings))
