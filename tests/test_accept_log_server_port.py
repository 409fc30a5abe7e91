"""run's per-connection log (probes/accept_log.py) matches an accept by the client's port and the server's: a
client of another port of the same workers (HAProxy's other frontend, nginx's other server block) may have the same
ephemeral port as one of the run's (the kernel picks them per destination), and its accept, printed first, was taken
for the run's connection. Behind NAT (a --target reached through a forwarded port) the workers' own port is not the
one the client connected to: never printed, it is not asked, as before.

The lines are bpftrace's, as log_program prints them: 'accept-order accepted PID CLIENT_PORT NSECS SERVER_PORT'."""

from __future__ import annotations

from accept_order.probes.accept_log import AcceptLog, log_program

A, B = 8080, 8081


def log_of(*lines: str) -> AcceptLog:
    log = AcceptLog([101, 102])
    log._out += "".join(f"{line}\n" for line in lines).encode()  # as the pump appends what bpftrace printed
    return log


def test_the_program_prints_the_accepted_socket_s_own_port() -> None:
    assert "$sk->__sk_common.skc_num" in log_program((101, 102))


def test_another_port_s_accept_from_the_same_client_port_is_not_ours() -> None:
    log = log_of(f"accept-order accepted 101 40000 1000 {B}", f"accept-order accepted 102 40000 1001 {A}")
    assert log.accepted_by(40000, 999, timeout_s=0, server_port=A) == 102  # B's, first, was taken before


def test_behind_nat_the_client_s_port_is_not_asked() -> None:
    log = log_of(f"accept-order accepted 101 40000 1000 {A}")
    assert log.accepted_by(40000, 999, timeout_s=0, server_port=18080) == 101  # forwarded 18080 -> 8080


def test_without_a_server_port_the_first_after_the_start() -> None:
    log = log_of(f"accept-order accepted 101 40000 900 {A}", f"accept-order accepted 102 40000 1000 {B}")
    assert log.accepted_by(40000, 999, timeout_s=0) == 102
