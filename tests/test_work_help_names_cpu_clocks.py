"""--work's help names the servers whose loop is timed by CPU, not by the wall clock it promises.

The help said 'a busy loop (not a sleep) until that much wall-clock time has passed, so a worker that waits for a
CPU meanwhile burns less', where nginx's and lighttpd's Lua loops spin until os.clock() (their worker process's CPU)
has moved by the work: a preempted nginx worker burns all of it. HAProxy's threads spin on their own CPU where
Debian's lua-posix gives HAProxy's Lua CLOCK_THREAD_CPUTIME_ID, and on os.clock(), their process's, where it is
missing: threads spinning at once then burn less each (0.67 ms of CPU a request for --work 1ms, -w 4 on 2 CPUs),
which the help says. Here the loops the tool writes are read: each that reads a CPU clock is named in the help, the
wall-clock ones are not, and HAProxy's, which reads its thread's where it can, is said to."""

from __future__ import annotations

from conftest import run_cli

from accept_order.servers.launched import apache_config, h2o, haproxy, lighttpd, nginx_config

LOOPS = {
    "nginx": nginx_config.lua_handler(1000, 0),
    "lighttpd": lighttpd.handler_lua(1000, 0),
    "HAProxy": haproxy.WORK_LUA,
    "h2o": h2o.handler_ruby(1000, 0),
    "Apache": apache_config.handler_lua(1000, 0),
}


def test_the_help_names_each_loop_timed_by_its_process_cpu() -> None:
    text = " ".join(run_cli(["latency", "--help"], columns=1000).stdout.split())
    said = text[text.index("--work DURATION") :].split("[default: 0ms]")[0]
    cpu_timed = {name for name, loop in LOOPS.items() if "os.clock" in loop}
    assert cpu_timed == {"nginx", "lighttpd", "HAProxy"}, cpu_timed  # the loops as written, not the help
    for name in LOOPS:
        assert (f"{name}'s" in said) == (name in cpu_timed), (name, said)
    assert "CLOCK_THREAD_CPUTIME_ID" in haproxy.WORK_LUA  # each thread's own CPU where lua-posix is there
    assert "HAProxy's until the request has used that much of its thread's" in said, said
    assert "lua-posix is missing" in said, said
