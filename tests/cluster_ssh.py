"""The ssh half of tests/cluster.py: the sshd config of each host and the client's config, keys and known_hosts,
all in the cluster's directory."""

from __future__ import annotations

from pathlib import Path

# The client's side: everything from the cluster's directory, nothing from ~/.ssh or /etc/ssh (-F skips both
# configs). curve25519 rather than the default sntrup761 hybrid: ~100 ms less per connection, paid by every gateway.
SSH_HOST = """Host {name}
  HostName {address}
  Port {port}
  User root
  IdentityFile {d}/client_key
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile {d}/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  UpdateHostKeys no
  CheckHostIP no
  BatchMode yes
  ConnectTimeout 5
  LogLevel ERROR
  ControlMaster no
  ControlPath none
  KexAlgorithms curve25519-sha256
"""

# The server's side. SetEnv SHLVL=1: bash, started by sshd for a command, reads ~/.bashrc unless its level is 2 or
# more; a root .bashrc that prints would corrupt execnet's stream, and this machine's (pyenv init) costs ~200 ms
# per connection. MaxStartups: many gateways may connect at once.
SSHD_CONFIG = """ListenAddress {address}:{port}
HostKey {d}/host_key
PidFile {d}/sshd-{name}.pid
AuthorizedKeysFile {d}/authorized_keys
UsePAM no
StrictModes no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
HostbasedAuthentication no
PermitUserRC no
PermitUserEnvironment no
PrintMotd no
PrintLastLog no
UseDNS no
X11Forwarding no
MaxStartups 100:30:200
MaxSessions 100
SetEnv SHLVL=1
"""


def write_ssh_files(d: Path, hosts: list[tuple[str, str]], port: int) -> None:
    """Given host_key and client_key (ssh-keygen's) in `d`: authorized_keys, known_hosts (the one host key pinned
    for every host's name and address), sshd-NAME.conf per (name, address), and ssh_config."""
    (d / "authorized_keys").write_text((d / "client_key.pub").read_text())
    kind, key = (d / "host_key.pub").read_text().split()[:2]
    (d / "known_hosts").write_text("".join(f"{name},{address} {kind} {key}\n" for name, address in hosts))
    for name, address in hosts:
        (d / f"sshd-{name}.conf").write_text(SSHD_CONFIG.format(name=name, address=address, port=port, d=d))
    (d / "ssh_config").write_text("\n".join(SSH_HOST.format(name=n, address=a, port=port, d=d) for n, a in hosts))
