"""--work's help names the servers whose loop is timed by their process's CPU, not by the wall clock it promises.

The help said 'a busy loop (not a sleep) until that much wall-clock time has passed, so a worker that waits for a
CPU meanwhile burns less', where nginx's and lighttpd's Lua loops, and HAProxy's since a68e51e, spin until os.clock()
(their process's CPU) has moved by the work: a preempted nginx worker burns all of it, and HAProxy's threads spinning
at once burn less each (0.58-0.66 ms of CPU a request for --work 1ms, -w 4 on 2 CPUs). Here the loops the tool
writes are read: each that reads os.clock() is named in the help, and the wall-clock ones are not."""

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
    cpu_timed = {name for name, loop in LOOPS.items() if "os.clock()" in loop}
    assert cpu_timed == {"nginx", "lighttpd", "HAProxy"}, cpu_timed  # the loops as written, not the help
    for name in LOOPS:
        assert (f"{name}'s" in said) == (name in cpu_timed), (name, said)
