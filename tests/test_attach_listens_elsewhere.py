"""--attach to a server that listens at another address than --host says where it listens and which --host to give.

'latency --attach PID --port 18911 --clients c1,c2' at 'accept-order serve --host 10.178.130.1 --port 18911' (the
address the client hosts reach) said to give --host; given none, '--attach PID --port 18911' said 'pid PID
(accept-order) and its 3 children hold no listener on 127.0.0.1:18911; nobody listens on 127.0.0.1:18911', the
default --host, with no word of the 10.178.130.1:18911 they held. Now '...; they listen on 10.178.130.1:18911: give
--host 10.178.130.1'. Here the other address is 127.0.0.2, on this host's loopback.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from cli_runs import Ran, ran_in_process


def attached_at_serve_on_another_address(port: int) -> Ran:
    """'run --attach' (at the default --host, 127.0.0.1) of an 'accept-order serve' listening on 127.0.0.2:PORT."""
    serve = subprocess.Popen(
        [sys.executable, "-m", "accept_order", "serve", "-w", "2", "--host", "127.0.0.2", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert serve.stdout is not None
        for line in serve.stdout:  # its banner ends with the workers' pids: listening by then
            if "worker 1 pid" in line:
                break
        return ran_in_process("run", "--attach", str(serve.pid), "--port", str(port), "-n", "1")
    finally:
        serve.terminate()
        serve.wait(30)
        if serve.stdout is not None:  # its pipe: not left open in this process, which runs the suite's next tests
            serve.stdout.close()


def test_attach_names_where_the_server_listens_and_the_host_to_give(free_port: int) -> None:
    port = free_port
    done = attached_at_serve_on_another_address(port)
    assert done.returncode == 1, done
    assert done.stderr.rstrip("\n").endswith(
        f"nobody listens on 127.0.0.1:{port}; they listen on 127.0.0.2:{port}: give --host 127.0.0.2"
    ), done.stderr


def test_attach_names_where_the_server_listens_though_another_holds_the_host_given(free_port: int) -> None:
    """'latency --attach PID --port 18931' at 'serve --host 127.0.0.2 --port 18931' while an nginx held
    127.0.0.1:18931 read '...; it is held by pid 29883 (nginx) and 4 of its children', with no word of the
    127.0.0.2:18931 the attached server held: the --host to give is the same whoever holds the default one."""
    port = free_port
    with socket.create_server(("127.0.0.1", port)):  # another program's listener, this test's own here
        done = attached_at_serve_on_another_address(port)
    assert done.returncode == 1, done
    assert f"127.0.0.1:{port}; it is held by pid {os.getpid()} " in done.stderr, done.stderr
    assert done.stderr.rstrip("\n").endswith(f"and its 2 children listen on 127.0.0.2:{port}: give --host 127.0.0.2"), (
        done.stderr
    )
