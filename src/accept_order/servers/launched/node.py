"""Node.js's cluster module, launched by the tool: a primary and its workers, from a generated script.

Modes are cluster.schedulingPolicy's two values. SCHED_RR (Node's default except on Windows): the primary
alone accepts, and hands each connection to a worker over IPC, to one that has acknowledged its last one,
so an idle server's order is a rotation (compare fd-pass). SCHED_NONE: every worker listens on the shared
socket through libuv's epoll, without EPOLLEXCLUSIVE (a herd). Each worker appends `pid client-port` to
the run's access log (one write per request, O_APPEND) as the witness. Node cannot pin a worker to a CPU;
the tool does that itself once the workers exist.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

from ...core.errors import PlanError, ServerUnavailable
from ...core.kinds import IDLE_CLOSE, ModeInfo, ServerKind, redraws
from ...core.models import Mechanism, Model
from ...core.spec import ServerSpec
from .base import LaunchedServer

if TYPE_CHECKING:
    from ...core.cures import LongLivedCure
    from ...core.target import Target

PACKAGE = "the nodejs package (Node 16 or newer)"


NODE_MODES: dict[str, ModeInfo] = {
    m.name: m
    for m in (
        ModeInfo(
            "sched-rr",
            "cluster.SCHED_RR (Node's default): the primary accepts and passes each connection to a worker",
            "with SCHED_RR only the primary accepts; it hands each connection over IPC to a free worker (one that "
            "acknowledged its last), in the order they became free (a FIFO of free workers), so an idle server's "
            "workers take turns",
            Model.FIFO,
            "shared",
            batches=False,
            settings=("cluster.schedulingPolicy = cluster.SCHED_RR",),
            seen_as=Mechanism.FD_PASS,  # the primary alone waits on the listener; workers wait on their IPC socket
            # a worker acknowledges a connection when it receives it, not when it has served it, so under load
            # the primary deals them out in turn whatever each worker holds: round-robin, not one queue
            discipline="round-robin",
        ),
        ModeInfo(
            "sched-none",
            "cluster.SCHED_NONE: every worker listens on the shared socket through libuv's epoll",
            "with SCHED_NONE every worker's libuv epoll holds the shared socket without EPOLLEXCLUSIVE: one "
            "connection wakes every idle worker and whoever accepts first serves it",
            None,
            "shared",
            herds=True,
            batches=False,
            settings=("cluster.schedulingPolicy = cluster.SCHED_NONE",),
            seen_as=Mechanism.EPOLL_HERD,
        ),
    )
}

SCRIPT = r"""// written by accept-order for one run; removed when it ends
'use strict';
const cluster = require('node:cluster');
const http = require('node:http');
const fs = require('node:fs');
const cfg = JSON.parse(process.env.ACCEPT_ORDER_NODE);
cluster.schedulingPolicy = cluster[cfg.policy];
if (cluster.isPrimary) {
  let listening = 0;
  cluster.on('listening', () => {
    listening += 1;
    if (listening === cfg.workers) fs.writeFileSync(cfg.pidfile, String(process.pid));
  });
  for (let i = 0; i < cfg.workers; i++) cluster.fork();
  const stop = () => { for (const w of Object.values(cluster.workers)) w.process.kill('SIGTERM'); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} else {
  const log = fs.openSync(cfg.accesslog, 'a');
  const work = () => {
    let i = 0;
    for (let k = 0; k < cfg.work_iters; k++) i += 1;
    if (cfg.work_us > 0) {
      const end = process.hrtime.bigint() + BigInt(cfg.work_us) * 1000n;
      while (process.hrtime.bigint() < end) i += 1;
    }
    return i;
  };
  // The socket counts its own requests: the log's third field, 1 for a connection's first
  const requests = Symbol('accept-order requests');
  const server = http.createServer((req, res) => {
    work();
    const n = (req.socket[requests] || 0) + 1;
    req.socket[requests] = n;
    fs.writeSync(log, `${process.pid} ${req.socket.remotePort} ${n}\n`);
    const headers = {'Content-Type': 'text/plain'};
    if (!cfg.keepalive) headers['Connection'] = 'close';
    res.writeHead(200, headers);
    res.end(`worker ${process.pid}\n`);
  });
  // Kept connections: no limit on requests per socket (Node's default), no idle timeout (5 s by default)
  if (cfg.keepalive) { server.keepAliveTimeout = 0; server.maxRequestsPerSocket = 0; }
  server.listen({port: cfg.port, host: cfg.host, backlog: cfg.backlog});
}
"""


def node_binary() -> str:
    found = shutil.which("node") or shutil.which("nodejs")
    if found is None:
        raise ServerUnavailable(f"node is not installed here: install {PACKAGE}")
    return found


def node_missing() -> str | None:
    try:
        node_binary()
    except ServerUnavailable as exc:
        return str(exc)
    return None


class NodeServer(LaunchedServer):
    name = "node"
    witness_source = "node access log"  # each worker's `pid client-port N`
    numbered_by = "socket's own count"  # N: the request's number on its socket, counted by the script

    def __init__(self, spec: ServerSpec) -> None:
        super().__init__(spec)
        self.mode = NODE_MODES[spec.mode]

    def command(self) -> list[str]:
        script = os.path.join(self.directory, "cluster.js")
        with open(script, "w") as f:
            f.write(SCRIPT)
        return [node_binary(), script]

    def environment(self) -> dict[str, str]:
        import json  # here, not at the top: `modes` and `inspect` import every kind

        spec = self.spec
        config = {
            "policy": self.mode.settings[0].rpartition(".")[2],  # SCHED_RR or SCHED_NONE
            "workers": spec.workers,
            "host": spec.host,
            "port": self.port,
            "backlog": spec.backlog,
            "work_us": spec.work_us,
            "work_iters": spec.work_iters,
            "pidfile": os.path.join(self.directory, "node.pid"),
            "accesslog": os.path.join(self.directory, "access.log"),
            "keepalive": spec.keepalive,
        }
        return {"ACCEPT_ORDER_NODE": json.dumps(config)}

    def ready(self) -> bool:
        return os.path.exists(os.path.join(self.directory, "node.pid"))

    def parse_request(self, fields: list[str]) -> tuple[int, ...] | None:
        """`PID PORT N`: (pid, port, the request's number on its socket)."""
        row = super().parse_request(fields)
        if row is None or len(fields) < 3 or not fields[2].isdigit():
            return row
        return (*row, int(fields[2]))

    def start(self) -> None:
        super().start()
        if self.spec.cpus:  # Node has no worker_cpu_affinity: pin the workers from here, in index order
            for index, pid in enumerate(self._pids):
                os.sched_setaffinity(pid, {self.spec.cpus[index % len(self.spec.cpus)]})


class NodeKind(ServerKind):
    name = "node"
    connections_at_once = "many"  # libuv's event loop
    process_names = ("node", "nodejs")
    serves_on_one_thread = True
    summary = "Node.js's cluster module, launched from a generated script"
    witness = NodeServer.witness_source

    @property
    def cures(self) -> tuple[LongLivedCure, ...]:
        from ...core.cures import ClientLimit, IdleLimit, LongLivedCure, SideBySide

        return (
            LongLivedCure(
                "server.maxRequestsPerSocket = 100",
                redraws(
                    "Node 16.10+ (0 by default: no limit) answers the request that reaches it with Connection: "
                    "close, and any later one on that connection with 503, so a client that honours it closes"
                ),
                ClientLimit(
                    "server.maxRequestsPerSocket",
                    launched="server.maxRequestsPerSocket = 0 (no limit) under a kept load",
                ),
            ),
            LongLivedCure(
                "server.keepAliveTimeout = 5000",
                f"{IDLE_CLOSE} (ms; 5000 by default)",
                IdleLimit("server.keepAliveTimeout"),
            ),
            LongLivedCure(
                "cluster.schedulingPolicy = cluster.SCHED_RR",
                "Node's default: the primary accepts every connection and hands it to the workers in turn (to one "
                "that has taken its last one), so a pool opened at idle is spread by turns, whatever each worker "
                "already holds (Node 20 has no reusePort: a second listener gets EADDRINUSE)",
                SideBySide(("sched-none", "sched-rr")),
                "sched-rr",
            ),
        )

    def modes(self) -> dict[str, ModeInfo]:
        return NODE_MODES

    def missing(self) -> str | None:
        return node_missing()

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.accept_batch not in (0, 1):
            raise PlanError("--accept-batch does not apply to node: it accepts its own way")

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return NodeServer(spec)
